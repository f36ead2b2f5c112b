#!/usr/bin/env python3
"""Compares two GEMM measurement CSVs of the same kernels (two runs of pipeweave-collect):
how far a repeated measurement moves, and how well it keeps each shape's candidate order.

  compare_runs.py A.csv B.csv [--json]

Rows are matched on (gpu, dtype, m, n, k, candidate). Prints the mean and median of
|log(B/A)| per row (as a percentage), that mean per candidate position and size class
(A under 50 us, 50-300 us, over 300 us), and the Spearman correlation of the two runs'
orders within each shape (mean and median over shapes with 3 or more candidates): the
ceiling a model's per-shape ranking can reach against one run when the other is the truth;
and every pair of one shape's candidates, banded by how far apart A measured them (the bands
of `pipeweave eval --ranking`), with the share B puts in the other order.
Standard library only.
"""
import argparse
import collections
import csv
import gzip
import json
import math
import statistics
import sys


def load(path):
    rows = {}
    with (gzip.open(path, "rt", newline="") if path.endswith(".gz") else open(path, newline="")) as f:
        for r in csv.DictReader(f):
            rows[(r["gpu"], r["dtype"], r["m"], r["n"], r["k"], int(r["candidate"]))] = float(r["duration_us"])
    return rows


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):  # average ranks over ties
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for t in range(i, j + 1):
            out[order[t]] = (i + j) / 2
        i = j + 1
    return out


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.mean(ra), statistics.mean(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))
    return num / den if den else None


PAIR_BAND_EDGES_PCT = (1, 2, 5, 10, 20)


def pair_band_names():
    edges = PAIR_BAND_EDGES_PCT
    return [f"<={edges[0]}%"] + [f"{lo}-{hi}%" for lo, hi in zip(edges, edges[1:])] + [f">{edges[-1]}%"]


def pairs_by_gap(shapes):
    """Per band of |log(A_i / A_j)|: pairs, and pairs B orders the other way (a tie is neither)."""
    pairs, misordered = [0] * (len(PAIR_BAND_EDGES_PCT) + 1), [0] * (len(PAIR_BAND_EDGES_PCT) + 1)
    for values in shapes.values():
        for i in range(len(values)):
            for j in range(i + 1, len(values)):
                (a_i, b_i), (a_j, b_j) = values[i], values[j]
                apart = abs(math.log(a_i / a_j)) * 100
                band = next((n for n, edge in enumerate(PAIR_BAND_EDGES_PCT) if apart <= edge), len(PAIR_BAND_EDGES_PCT))
                pairs[band] += 1
                misordered[band] += (a_i - a_j) * (b_i - b_j) < 0
    return pairs, misordered


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    a, b = load(args.a), load(args.b)
    common = sorted(set(a) & set(b))
    if not common:
        sys.exit("compare_runs.py: error: the two files share no (gpu, dtype, m, n, k, candidate) row")
    moves = [abs(math.log(b[k] / a[k])) * 100 for k in common]
    by_position = collections.defaultdict(list)
    for k in common:
        size = "under 50 us" if a[k] < 50 else "50-300 us" if a[k] <= 300 else "over 300 us"
        by_position[(size, k[5])].append(math.log(b[k] / a[k]) * 100)
    shapes = collections.defaultdict(list)
    for k in common:
        shapes[k[:5]].append((a[k], b[k]))
    rhos = [spearman([x for x, _ in v], [y for _, y in v]) for v in shapes.values() if len(v) >= 3]
    rhos = [r for r in rhos if r is not None]
    if not rhos:
        sys.exit("compare_runs.py: error: no shape has 3 or more candidates in both files")
    positions = sorted({k[5] for k in common})
    pairs, misordered = pairs_by_gap(shapes)
    result = {
        "rows": len(common),
        "mean_abs_log_ratio_pct": statistics.mean(moves),
        "median_abs_log_ratio_pct": statistics.median(moves),
        "shapes": len(rhos),
        "per_shape_spearman_mean": statistics.mean(rhos),
        "per_shape_spearman_median": statistics.median(rhos),
        "pairs_by_measured_gap": [
            {"measured_apart": name, "pairs": n, "misordered_pairs": m, "misordered_pct": 100 * m / n if n else 0.0}
            for name, n, m in zip(pair_band_names(), pairs, misordered)],
        "mean_log_ratio_pct_by_size_and_position": {
            size: {p: round(statistics.mean(by_position[(size, p)]), 3) for p in positions if by_position[(size, p)]}
            for size in ("under 50 us", "50-300 us", "over 300 us")},
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['rows']} rows: |log(B/A)| mean {result['mean_abs_log_ratio_pct']:.2f}%, "
          f"median {result['median_abs_log_ratio_pct']:.2f}%")
    print(f"per-shape Spearman of the two orders over {result['shapes']} shapes: mean "
          f"{result['per_shape_spearman_mean']:.3f}, median {result['per_shape_spearman_median']:.3f}")
    print("pairs of one shape's candidates by how far apart A measured them: share B orders the other way")
    for band in result["pairs_by_measured_gap"]:
        print(f"  {band['measured_apart'] + ' apart':<12} {band['misordered_pct']:5.1f}% of {band['pairs']}")
    print("mean log(B/A) % by candidate " + " ".join(f"{p:>5}" for p in positions) + ":")
    for size, values in result["mean_log_ratio_pct_by_size_and_position"].items():
        print(f"  {size:<12} " + " ".join(f"{values[p]:+.2f}" if p in values else "    -" for p in positions))


if __name__ == "__main__":
    main()
