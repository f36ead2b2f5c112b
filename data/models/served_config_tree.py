#!/usr/bin/env python3
"""cuBLAS's choice of kernel learnt by a decision tree, a study (docs/experiments/served-gemms.md):

    PYTHON served_config_tree.py OUT_DIR TRAIN.csv [TRAIN.csv ...] --test TEST.csv [TEST.csv ...] --dtype bf16|fp8 [--leaf N ...] [--remainders]

PYTHON: an interpreter with numpy and scikit-learn (PyPI). The rows are served_split.sh's (each
GPU's train.csv and test.csv), or measurement files (.csv.gz read as they are), those of --dtype. A decision tree learns, from the shape and the
GPU's memory bandwidth (--remainders: the shape's remainders too, waves over the GPU's SMs), the config cuBLAS ran first (tile, split-K, stages, cluster, swap,
schedule, raster; rows whose tile nothing says are not learnt from, nor those of the pre-Hopper
kernels cuBLAS runs for misaligned strides, whose config names no schedule: the library answers
those shapes by another path). Its leaf size is chosen on the
training rows alone: each --leaf (default 1 2 5 10 20 50) scored by its out-of-fold accuracy, five
folds of whole families (random shapes in five groups by shape). Writes:
  OUT_DIR/train_{dtype}.csv  the training rows, each with the config the tree predicts for it when
                             its fold was left out (a network trained on them meets configs as
                             imperfect as it will at test time), and is_default 0 (so that `train`
                             fits no factor for GEMMs without a config: a search per shape);
  OUT_DIR/test_{dtype}_{gpu}.csv  the test rows of each GPU, each with the config the tree trained
                             on every training row predicts (--by-seed: test_{dtype}_{gpu}_seed{S}.csv,
                             a file per shape list, the rows' shape_seed);
and prints how often the predicted config is cuBLAS's (whole, and its tile and split-K). A
predicted split-K past the shape's K steps (a config of a longer K) is cut to them.
"""
import argparse
import base64
import csv
import json
import gzip
import math
import os
import re
import zlib

import numpy as np
from sklearn.model_selection import GroupKFold
from sklearn.tree import DecisionTreeClassifier

CONFIG = ("tile_m", "tile_n", "tile_k", "split_k", "stages", "cluster_m", "cluster_n", "swap_ab", "schedule", "raster")
DRAM_GB_S = {"H100-SXM": 3350.0, "H200-SXM": 4800.0}  # the catalog's data-sheet figures (src/catalog.cpp)
SM_COUNT = {"H100-SXM": 132, "H200-SXM": 132}


def features(row):
    m, n, k = (float(row[c]) for c in ("m", "n", "k"))
    lm, ln, lk = math.log2(m), math.log2(n), math.log2(k)
    return [lm, ln, lk, lm + ln, ln + lk, lm + ln + lk, math.log2(DRAM_GB_S[row["gpu"]]), n % 256 == 0, k % 256 == 0]


def remainders(row):
    """18 more inputs (--remainders; REMAINDER_NAMES): m mod 8-256; n and k mod 64, 128, 256; the
    waves of m-side tiles of 64-256 by 128 on the GPU's SMs; the tiles of 128 and 256 squares past
    whole waves."""
    m, n, k = (int(row[c]) for c in ("m", "n", "k"))
    sms = SM_COUNT[row["gpu"]]
    values = [m % d for d in (8, 16, 32, 64, 128, 256)]
    for d in (64, 128, 256):
        values += [n % d, k % d]
    values += [math.ceil(m / t) * math.ceil(n / 128) / sms for t in (64, 128, 192, 256)]
    values += [(math.ceil(m / t) * math.ceil(n / t)) % sms for t in (128, 256)]
    return values


INPUT_NAMES = ["log2_m", "log2_n", "log2_k", "log2_mn", "log2_nk", "log2_mnk", "log2_dram_gb_s", "n_multiple_of_256",
               "k_multiple_of_256"]  # features()'s, in order: the first nine of GemmConfigTree::kInputNames
REMAINDER_NAMES = ["m_mod_8", "m_mod_16", "m_mod_32", "m_mod_64", "m_mod_128", "m_mod_256", "n_mod_64", "k_mod_64",
                   "n_mod_128", "k_mod_128", "n_mod_256", "k_mod_256", "waves_64x128", "waves_128x128", "waves_192x128",
                   "waves_256x128", "tiles_past_waves_128x128", "tiles_past_waves_256x256"]  # remainders()'s: the rest


def packed(values):
    """float32, little-endian, base64: as the model files pack their numbers."""
    return base64.b64encode(np.asarray(values, dtype="<f4").tobytes()).decode()


def tree_to_json(tree, names):
    """The fitted tree as include/pipeweave/config_tree.hpp reads it. scikit-learn compares float32
    inputs with double thresholds; each is written as the greatest float32 at or below it, which
    sends every float32 input the same way."""
    t = tree.tree_
    leaf = t.children_left == -1
    thresholds = t.threshold.astype(np.float32)
    above = thresholds.astype(np.float64) > t.threshold
    thresholds[above] = np.nextafter(thresholds[above], np.float32(-np.inf))
    # The configs some leaf names, in the order of the classes (scikit-learn keeps every class seen)
    leaf_class = np.where(leaf, t.value[:, 0, :].argmax(axis=1), -1)
    used = sorted(set(leaf_class[leaf].tolist()))
    index = {c: i for i, c in enumerate(used)}
    configs = []
    for label in tree.classes_[used]:
        v = label.split("|")
        configs.append({"tile_m": int(v[0]), "tile_n": int(v[1]), "tile_k": int(v[2]), "split_k": int(v[3]), "stages": int(v[4]),
                        "cluster_m": int(v[5]), "cluster_n": int(v[6]), "swap_ab": v[7] == "1", "schedule": v[8], "raster": v[9]})
    # scikit-learn numbers nodes in preorder, each inner node's left child the next node, which the
    # file leaves implicit; a threshold and right child per inner node, a config per leaf
    inner = ~leaf
    if not np.array_equal(t.children_left[inner], np.flatnonzero(inner) + 1):
        raise SystemExit("served_config_tree: the tree's nodes are not in preorder")
    return {"inputs": names, "nodes": int(t.node_count),
            "input_base64": packed(np.where(leaf, -1, t.feature)),
            "threshold_base64": packed(thresholds[inner]),
            "right_base64": packed(t.children_right[inner]),
            "config_base64": packed([index[c] for c in leaf_class[leaf].tolist()]),
            "configs": configs}


def read(paths, dtype):
    rows = []
    for path in paths:
        with (gzip.open(path, "rt", newline="") if path.endswith(".gz") else open(path, newline="")) as f:
            reader = csv.DictReader(f)
            header = reader.fieldnames
            rows += [r for r in reader if r["is_default"] == "1" and r["dtype"].startswith(dtype)]
    return header, rows


def read_choices(paths, dtype, exclude, test):
    """cuBLAS's choices without a time (cublas_choice_to_rows.py's files: m, n, k, family and a config
    token per type; the GPU the folder's name), as rows the tree learns from beside the measured
    ones; the shapes of the `test` rows are left out, and every shape whose weights (n, k) a row of
    `exclude` has. A shape that several lists of a GPU hold is learnt once (cuBLAS's choice of it is
    one fact; the lists share many of the families' layers at small token counts)."""
    excluded = {(r["n"], r["k"]) for r in read(exclude, dtype)[1]} if exclude else set()
    tested = {(r["m"], r["n"], r["k"]) for r in test}
    rows = []
    seen = {}  # (gpu, m, n, k) -> the config token learnt
    # In the order of the lists' seeds (a shape's family, which sets its fold, is the first list's).
    for path in sorted(paths, key=lambda p: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", os.path.basename(p))]):
        gpu = os.path.basename(os.path.dirname(os.path.abspath(path)))
        with gzip.open(path, "rt", newline="") as f:
            for r in csv.DictReader(f):
                if r[dtype] == "-" or (r["n"], r["k"]) in excluded or (r["m"], r["n"], r["k"]) in tested:
                    continue
                key = (gpu, r["m"], r["n"], r["k"])
                if key in seen:
                    if seen[key] != r[dtype]:
                        raise SystemExit(f"{path}: cuBLAS's {dtype} choice for m={r['m']}, n={r['n']}, k={r['k']} on the {gpu} is "
                                         f"{r[dtype]}, another list's {seen[key]}: the lists disagree")
                    continue
                seen[key] = r[dtype]
                tile, split_k, stages, cluster, swap_ab, schedule, raster = r[dtype].split("/")
                if not schedule:  # a pre-Hopper kernel for misaligned strides (learnable())
                    continue
                tile_m, tile_n, tile_k = tile.split("x")
                cluster_m, cluster_n = cluster.split("x")
                rows.append({"gpu": gpu, "m": r["m"], "n": r["n"], "k": r["k"], "family": r["family"], "tile_m": tile_m,
                             "tile_n": tile_n, "tile_k": tile_k, "split_k": split_k, "stages": stages, "cluster_m": cluster_m,
                             "cluster_n": cluster_n, "swap_ab": swap_ab, "schedule": schedule, "raster": raster})
    return rows


def learnable(row):
    """A row whose config the tree learns: its tile named, and a Hopper kernel's (a schedule)."""
    return row["config_source"] != "unknown" and row["schedule"] != ""


def group_of(row):
    if row["family"] != "random":
        return row["family"]
    return "random%d" % (zlib.crc32(",".join(row[c] for c in ("m", "n", "k")).encode()) % 5)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("train", nargs="+")
    parser.add_argument("--test", nargs="+", required=True)
    parser.add_argument("--dtype", choices=("bf16", "fp8"), required=True)
    parser.add_argument("--max-depth", type=int, help="no deeper tree than this (the tests' small one)")
    parser.add_argument("--tree-json", help="write the tree fitted on every training row here, as a model file's config_tree")
    parser.add_argument("--by-seed", action="store_true", help="a test file per GPU and shape list (shape_seed column)")
    parser.add_argument("--leaf", nargs="+", type=int, default=[1, 2, 5, 10, 20, 50])
    parser.add_argument("--remainders", action="store_true", help="18 more inputs, the shape's remainders (REMAINDER_NAMES)")
    parser.add_argument("--choices", nargs="+", default=[],
                        help="cuBLAS's choices without a time (cublas_choice_to_rows.py's files): the tree learns from them too "
                             "(but the --test rows' shapes)")
    parser.add_argument("--choices-exclude", nargs="+", default=[],
                        help="leave out the choices of the weight shapes (n, k) these rows have (a split's held-out rows)")
    args = parser.parse_args()
    inputs = (lambda r: features(r) + remainders(r)) if args.remainders else features
    names = INPUT_NAMES + REMAINDER_NAMES if args.remainders else INPUT_NAMES
    header, train = read(args.train, args.dtype)
    _, test = read(args.test, args.dtype)
    learnt = [r for r in train if learnable(r)]
    choices = read_choices(args.choices, args.dtype, args.choices_exclude, test)
    if choices:
        print(f"{len(choices)} more rows of cuBLAS's choices (no time) from {', '.join(args.choices)}")
    # The choices learnt beside the measured rows, in the same folds (by family or random shape);
    # only the measured rows need configs out of fold.
    x = np.array([inputs(r) for r in learnt + choices])
    labels = ["|".join(r[c] for c in CONFIG) for r in learnt + choices]
    # A choice of a shape that a measured row has takes that row's group: the list the choices come
    # from may name another family for a shape two families share (an expert's (n, k)).
    measured_group = {(r["m"], r["n"], r["k"]): group_of(r) for r in learnt}
    groups = [group_of(r) for r in learnt] + [measured_group.get((r["m"], r["n"], r["k"]), group_of(r)) for r in choices]
    folds = [(fit, held[held < len(learnt)]) for fit, held in GroupKFold(n_splits=5).split(x, labels, groups)]
    best = None
    for leaf in args.leaf:
        oof = np.empty(len(learnt), dtype=object)
        for fit, held in folds:
            tree = DecisionTreeClassifier(min_samples_leaf=leaf, max_depth=args.max_depth, random_state=1).fit(
                x[fit], [labels[i] for i in fit])
            oof[held] = tree.predict(x[held])
        accuracy = float(np.mean([a == b for a, b in zip(oof, labels[:len(learnt)])]))
        print(f"leaf {leaf}: out-of-fold accuracy {100 * accuracy:.1f}% (whole config)")
        if best is None or accuracy > best[0]:
            best = (accuracy, leaf, oof)
    _, leaf, oof = best
    print(f"chosen: leaf {leaf}")
    tree = DecisionTreeClassifier(min_samples_leaf=leaf, max_depth=args.max_depth, random_state=1).fit(x, labels)
    print(f"tree: {tree.tree_.node_count} nodes, depth {tree.get_depth()}, {len(tree.classes_)} configs")
    # Rows not learnt from keep a prediction too (the tree's, trained on every learnt row).
    predicted_train = dict(zip(map(id, learnt), oof))
    unknown = [r for r in train if not learnable(r)]
    if unknown:
        predicted_train.update(zip(map(id, unknown), tree.predict(np.array([inputs(r) for r in unknown]))))
    os.makedirs(args.out, exist_ok=True)
    if args.tree_json:
        with open(args.tree_json, "w") as f:
            json.dump(tree_to_json(tree, names), f)
    predicted_test = tree.predict(np.array([inputs(r) for r in test]))
    os.makedirs(args.out, exist_ok=True)
    for name, rows, predicted in (("train", train, [predicted_train[id(r)] for r in train]), ("test", test, predicted_test)):
        known = [(r, p) for r, p in zip(rows, predicted) if learnable(r)]
        whole = np.mean([p == "|".join(r[c] for c in CONFIG) for r, p in known])
        tile = np.mean([p.split("|")[:4] == [r[c] for c in CONFIG[:4]] for r, p in known])
        print(f"{name}: {len(rows)} rows; the predicted config is cuBLAS's in {100 * whole:.1f}%, its tile and split-K in {100 * tile:.1f}%")
        files = {}  # the training rows in one file, the test rows in one per GPU
        for r, p in zip(rows, predicted):
            suffix = f"_seed{r['shape_seed']}" if args.by_seed else ""
            path = os.path.join(args.out, f"train_{args.dtype}.csv" if name == "train" else f"test_{args.dtype}_{r['gpu']}{suffix}.csv")
            if path not in files:
                files[path] = csv.DictWriter(open(path, "w", newline=""), fieldnames=header)
                files[path].writeheader()
            out = dict(r)
            out.update(zip(CONFIG, p.split("|")))
            k_steps = -(-int(out["k"]) // int(out["tile_k"]))
            out["split_k"] = str(min(int(out["split_k"]), k_steps))
            if name == "train":
                out["is_default"] = "0"
            files[path].writerow(out)

if __name__ == "__main__":
    main()
