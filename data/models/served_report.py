#!/usr/bin/env python3
"""Per-family accuracy of a GEMM model on the served measurements, from eval's per-row report:

    python3 data/models/served_report.py EVAL.csv DATA.csv[.gz] [DATA.csv[.gz] ...] [--csv OUT.csv] [--time-bands] [--spread]

EVAL.csv is `pipeweave eval --report DIR`'s eval.csv, DATA.csv the rows it scored (with the
family, tp and layer columns of the served files). Prints MAPE and mean signed error (bias:
positive is too slow) per dtype over all rows, the held-out families, the random shapes, three
bands of m and each family; --csv writes the same table. --time-bands adds four bands of the
measured time (0-10, 10-30, 30-100 and from 100 us), to set beside the run-to-run spread of the
same shapes measured again (served_shift.py), which is largest on short kernels. --spread adds,
per dtype over all rows, the median and the 5th and 95th percentiles of the signed error: a mean
bias well below the median is a tail of GEMMs slower than predicted, which a loss seeking the
median ratio (MAPE) leaves in the mean.
"""
import argparse
import collections
import csv
import gzip
import re
import statistics


TIME_BANDS = ((0, 10), (10, 30), (30, 100), (100, float("inf")))


def read_eval(path):
    """eval.csv's GEMM rows as {(dtype, m, n, k): (measured_us, predicted_us)}, the keys as the
    measurement files spell them."""
    rows = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            shape = re.search(r"m=(\d+),n=(\d+),k=(\d+)", r["kernel"])
            dtype = re.search(r"dtype=(\w+)", r["kernel"]).group(1)
            rows[(dtype, *shape.groups())] = (float(r["measured_us"]), float(r["predicted_us"]))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("eval_csv")
    parser.add_argument("data_csv", nargs="+")
    parser.add_argument("--csv")
    parser.add_argument("--time-bands", action="store_true")
    parser.add_argument("--spread", action="store_true")
    args = parser.parse_args()
    predicted = read_eval(args.eval_csv)
    groups = collections.defaultdict(list)
    for path in args.data_csv:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", newline="") as f:
            for r in csv.DictReader(f):
                key = (r["dtype"], r["m"], r["n"], r["k"])
                if key not in predicted:
                    continue
                measured, guess = predicted[key]
                error = (guess - measured) / measured * 100
                dtype = "bf16" if r["dtype"] == "bf16" else "fp8"
                m = int(r["m"])
                band = "m 1-256" if m <= 256 else "m 257-8192" if m <= 8192 else "m 8193-65536"
                kind = "random shapes" if r["family"] == "random" else "model families"
                extra = ()
                if args.time_bands:
                    low, high = next(b for b in TIME_BANDS if b[0] <= measured < b[1])
                    extra = (f"measured {low}-{high:g} us",)
                for group in ("all", kind, band) + extra + (("family " + r["family"],) if r["family"] != "random" else ()):
                    groups[(dtype, group)].append(error)
    order = ["all", "model families", "random shapes", "m 1-256", "m 257-8192", "m 8193-65536"]
    order += [f"measured {low}-{high:g} us" for low, high in TIME_BANDS]
    keys = sorted(groups, key=lambda k: (k[0], order.index(k[1]) if k[1] in order else len(order), k[1]))
    table = [(dtype, group, len(groups[(dtype, group)]), statistics.fmean(abs(e) for e in groups[(dtype, group)]),
              statistics.fmean(groups[(dtype, group)])) for dtype, group in keys]
    print(f"{'dtype':5} {'rows':32} {'count':>7} {'MAPE%':>7} {'bias%':>7}")
    for dtype, group, count, mape, bias in table:
        print(f"{dtype:5} {group:32} {count:7} {mape:7.2f} {bias:+7.2f}")
    if args.spread:
        print(f"{'dtype':5} {'signed error over all rows, %':32} {'median':>7} {'p5':>7} {'p95':>7}")
        for dtype in sorted({dtype for dtype, _ in groups}):
            errors = sorted(groups[(dtype, "all")])
            at = lambda share: errors[round(share * (len(errors) - 1))]  # noqa: E731 (nearest rank)
            print(f"{dtype:5} {'':32} {statistics.median(errors):+7.2f} {at(0.05):+7.2f} {at(0.95):+7.2f}")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["dtype", "rows", "count", "mape_pct", "bias_pct"])
            for dtype, group, count, mape, bias in table:
                writer.writerow([dtype, group, count, f"{mape:.2f}", f"{bias:+.2f}"])


if __name__ == "__main__":
    main()
