#!/usr/bin/env python3
"""Would the decision tree of cuBLAS's config (served_config_tree.py) name it more often with inputs
of the shape's remainders? A study (docs/experiments/served-gemms.md):

    python3 data/models/split_served.py S/H100 data/measurements/H100-SXM/gemm_served_{bf16,fp8}.csv.gz
    python3 data/models/split_served.py S/H200 data/measurements/H200-SXM/gemm_served_{bf16,fp8}.csv.gz
    PYTHON served_config_tree_inputs.py S/H100/train.csv S/H200/train.csv --test S/H100/test.csv S/H200/test.csv --dtype bf16|fp8

PYTHON: an interpreter with numpy and scikit-learn (PyPI). For the tree's nine inputs and for those
with 18 more (m mod 8-256; n and k mod 64, 128, 256; the waves of m-side tiles of 64-256 by 128 on
132 SMs; the tiles of 128 and 256 squares past whole waves), one row a leaf: the whole-config
accuracy out of fold on the training rows (five folds of whole families, as served_config_tree.py
chooses its leaf size) and on the test rows (the split's held-out families and shapes). Rows whose
tile nothing says are left out, as there. A few minutes a type on one core.
"""
import argparse

import numpy as np
from sklearn.model_selection import GroupKFold
from sklearn.tree import DecisionTreeClassifier

import served_config_tree as tree_study


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("train", nargs="+")
    parser.add_argument("--test", nargs="+", required=True)
    parser.add_argument("--dtype", choices=("bf16", "fp8"), required=True)
    args = parser.parse_args()
    known = lambda rows: [r for r in rows if r["config_source"] != "unknown"]  # noqa: E731
    train = known(tree_study.read(args.train, args.dtype)[1])
    test = known(tree_study.read(args.test, args.dtype)[1])
    label = lambda rows: np.array(["|".join(r[c] for c in tree_study.CONFIG) for r in rows])  # noqa: E731
    y, y_test = label(train), label(test)
    groups = [tree_study.group_of(r) for r in train]
    for name, inputs in (("the nine inputs", tree_study.features),
                         ("with the remainders", lambda r: tree_study.features(r) + tree_study.remainders(r))):
        x = np.array([inputs(r) for r in train], dtype=np.float32)
        hits = 0
        for fit, held in GroupKFold(5).split(x, y, groups):
            fold_tree = DecisionTreeClassifier(min_samples_leaf=1, random_state=0).fit(x[fit], y[fit])
            hits += int(np.sum(fold_tree.predict(x[held]) == y[held]))
        whole = DecisionTreeClassifier(min_samples_leaf=1, random_state=0).fit(x, y)
        on_test = np.mean(whole.predict(np.array([inputs(r) for r in test], dtype=np.float32)) == y_test)
        print(f"{args.dtype} {name}: out of fold {100 * hits / len(y):.1f}%, test rows {100 * on_test:.1f}% "
              f"({whole.tree_.node_count} nodes)", flush=True)


if __name__ == "__main__":
    main()
