#!/usr/bin/env python3
"""Does a GEMM's measured time depend on what the GPU ran just before it?

  history_bias.py EVAL_REPORT.csv SHAPES.csv MEASURED.csv [--gpu NAME] [--window N]

EVAL_REPORT.csv: the per-row CSV of `pipeweave eval --report DIR` (held-out GEMM rows).
SHAPES.csv: the shape list in the order it was collected (data/shapes/gemm.csv).
MEASURED.csv: the measurement CSV of that collection (every shape, every candidate).

For each held-out shape, the model's mean log(predicted / measured) over its candidates (its
bias), against the GPU time the collection spent on the N shapes measured before it (every
candidate, its warm-up calls and the `reps` timed calls of its row). A clock that the previous shapes pulled down shows
as a negative correlation: the heavier the history, the slower the shape measured, the lower
the prediction against it. Prints the correlation and the mean bias per e-fold of history time.
Standard library only.
"""
import argparse
import collections
import csv
import gzip
import math
import statistics


def correlation(a, b):
    ma, mb = statistics.mean(a), statistics.mean(b)
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    return cov / math.sqrt(sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report")
    parser.add_argument("shapes")
    parser.add_argument("measured")
    parser.add_argument("--gpu", default="H100-SXM")
    parser.add_argument("--window", type=int, default=3, help="shapes before each one that count (default 3)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls before each candidate's timed ones "
                        "(pipeweave-collect's --warmup, default 3)")
    args = parser.parse_args()
    if args.window < 1 or args.warmup < 0:
        parser.error("--window must be at least 1 and --warmup at least 0")

    with open(args.shapes) as f:
        order = [(r["dtype"], r["m"], r["n"], r["k"]) for r in csv.DictReader(f)]
    busy_us = collections.defaultdict(float)
    with (gzip.open(args.measured, "rt", newline="") if args.measured.endswith(".gz") else open(args.measured)) as f:
        for r in csv.DictReader(f):
            if r["gpu"] == args.gpu:
                calls = int(r.get("reps") or 10) + args.warmup
                busy_us[(r["dtype"], r["m"], r["n"], r["k"])] += calls * float(r["duration_us"])
    bias = collections.defaultdict(list)
    with open(args.report) as f:
        for r in csv.DictReader(f):
            if r["gpu"] != args.gpu or r["family"] != "gemm":
                continue
            keys = dict(item.split("=", 1) for item in r["kernel"].split(":", 1)[1].split(","))
            shape = (keys["dtype"], keys["m"], keys["n"], keys["k"])
            bias[shape].append(math.log(float(r["predicted_us"]) / float(r["measured_us"])))
    position = {shape: i for i, shape in enumerate(order)}
    history, shape_bias = [], []
    for shape, values in bias.items():
        if shape not in position:
            raise SystemExit(f"history_bias.py: {args.report} holds {shape}, which {args.shapes} does not list: "
                             "give the shape list the collection ran")
        i = position[shape]
        before = sum(busy_us[order[j]] for j in range(max(0, i - args.window), i))
        if before <= 0:  # the first shape, or shapes before it that this GPU's file lacks
            continue
        history.append(math.log(before))
        shape_bias.append(statistics.mean(values))
    if len(history) < 3:
        raise SystemExit(f"history_bias.py: only {len(history)} held-out {args.gpu} shapes with a history: "
                         "is --gpu the name in the CSVs?")
    print(f"{args.gpu}: {len(history)} held-out shapes; correlation of the model's bias with the log of the GPU time "
          f"of the {args.window} shapes before: {correlation(history, shape_bias):+.3f}")
    bins = collections.defaultdict(list)
    for h, b in zip(history, shape_bias):
        bins[int(h)].append(b)
    print("history (GPU time before)   shapes   mean bias")
    for e in sorted(bins):
        print(f"  {math.exp(e) / 1e3:9.1f}-{math.exp(e + 1) / 1e3:9.1f} ms   {len(bins[e]):6d}   {100 * statistics.mean(bins[e]):+6.2f}%")


if __name__ == "__main__":
    main()
