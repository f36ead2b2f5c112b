#!/usr/bin/env python3
"""The scores of served_tree_pick_mean.sh (docs/experiments/served-gemms.md):

    python3 served_tree_pick_mean.py WORK_DIR

WORK_DIR holds, per data type, GPU and shape list S (1-3: the held-out rows of the split; 4, 5: the
fresh draws), tree/test_{dtype}_{gpu}_seed{S}.csv (the rows, at the tree's configs) and the two
networks' eval reports of those rows, tree_{dtype}_{gpu}_{S}/eval.csv (given the tree's config)
and pick_{dtype}_{gpu}_{S}/eval.csv (from the shape: the GEMM model's pick), and fit_tree_{dtype}/eval.csv,
the tree's network over its own training rows (at the configs it was trained at). Prints MAPE and
mean signed error of each and of their geometric mean, by model families and random shapes; then the
tree's network times its factor (1 / mean(predicted / measured) over its training rows, as the bundled
tree networks carry theirs, their latency_scale: served_scale.py, which fits it through the joined
model at the tree's own configs, where this fits at the configs the network was trained at) and the
geometric mean of the pick and that.
"""
import csv
import math
import os
import sys


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def factor(path):
    """1 / mean(predicted / measured) over an eval report's rows."""
    ratios = [float(r["predicted_us"]) / float(r["measured_us"]) for r in rows(path)]
    return len(ratios) / sum(ratios)


def main():
    work = sys.argv[1]
    factors = {dtype: factor(os.path.join(work, f"fit_tree_{dtype}", "eval.csv")) for dtype in ("bf16", "fp8")}
    print("the tree networks' factors, fitted on their training rows: " +
          ", ".join(f"{dtype} {value:.4f}" for dtype, value in factors.items()))
    print(f"{'GPU':9} {'dtype':5} {'rows':18} {'group':9} {'count':>6}  {'pick':>14}  {'tree':>14}  {'geometric mean':>14}"
          f"  {'tree x factor':>14}  {'mean, factor':>14}")
    for dtype in ("bf16", "fp8"):
        f = factors[dtype]
        for gpu in ("H100-SXM", "H200-SXM"):
            for name, seeds in (("held out", (1, 2, 3)), ("seed 4", (4,)), ("seed 5", (5,))):
                scored = []  # (family?, measured, pick, tree)
                for seed in seeds:
                    data = os.path.join(work, "tree", f"test_{dtype}_{gpu}_seed{seed}.csv")
                    if not os.path.exists(data):
                        continue
                    given = rows(data)
                    tree = rows(os.path.join(work, f"tree_{dtype}_{gpu}_{seed}", "eval.csv"))
                    pick = rows(os.path.join(work, f"pick_{dtype}_{gpu}_{seed}", "eval.csv"))
                    if not len(given) == len(tree) == len(pick):
                        sys.exit(f"{data}: {len(given)} rows, {len(tree)} and {len(pick)} scored")
                    for g, t, p in zip(given, tree, pick):
                        measured = float(g["duration_us"])
                        if abs(float(t["measured_us"]) / measured - 1) > 1e-4 or abs(float(p["measured_us"]) / measured - 1) > 1e-4:
                            sys.exit(f"{data}: the reports' rows are not the file's")
                        scored.append((g["family"] != "random", measured, float(p["predicted_us"]), float(t["predicted_us"])))
                if not scored:
                    continue
                for group, family in (("families", True), ("random", False)):
                    part = [s for s in scored if s[0] == family]
                    cells = []
                    for predicted in (lambda s: s[2], lambda s: s[3], lambda s: math.sqrt(s[2] * s[3]), lambda s: s[3] * f,
                                      lambda s: math.sqrt(s[2] * s[3] * f)):
                        errors = [predicted(s) / s[1] - 1 for s in part]
                        mape = 100 * sum(map(abs, errors)) / len(errors)
                        bias = 100 * sum(errors) / len(errors)
                        cells.append(f"{mape:5.2f}% ({bias:+.1f})")
                    print(f"{gpu:9} {dtype:5} {name:18} {group:9} {len(part):6}  " + "  ".join(f"{c:>14}" for c in cells))


if __name__ == "__main__":
    main()
