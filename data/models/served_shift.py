#!/usr/bin/env python3
"""How much a later served-GEMM run's shapes measured again differ from the earlier rows:

    python3 data/models/served_shift.py REPEATS.csv.gz EARLIER.csv.gz [...]

REPEATS is served_to_measurements.py's NAME_repeats_<dtype>.csv.gz (the later run's rows whose
shape an --exclude file held), EARLIER those files. Prints, per data type, the rows matched, the
median and mean of later / earlier time, the 10th and 90th percentiles, and the share that ran
the same kernel: the shift between runs (and machines) that a fresh set carries.
"""
import csv
import gzip
import statistics
import sys


def rows(path):
    with gzip.open(path, "rt", newline="") as f:
        return list(csv.DictReader(f))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    earlier = {}
    for path in sys.argv[2:]:
        for r in rows(path):
            earlier[(r["dtype"], r["m"], r["n"], r["k"])] = r
    ratios, same = {}, {}
    for r in rows(sys.argv[1]):
        before = earlier.get((r["dtype"], r["m"], r["n"], r["k"]))
        if before is None:
            sys.exit(f"served_shift: {r['dtype']} {r['m']}x{r['n']}x{r['k']} is in no earlier file")
        ratios.setdefault(r["dtype"], []).append(float(r["duration_us"]) / float(before["duration_us"]))
        same.setdefault(r["dtype"], []).append(r["kernel"] == before["kernel"])
    print(f"{'dtype':9} {'rows':>6} {'median':>7} {'mean':>7} {'p10':>7} {'p90':>7} {'same kernel':>12}")
    for dtype, values in ratios.items():
        values.sort()
        print(f"{dtype:9} {len(values):6} {statistics.median(values):7.4f} {statistics.fmean(values):7.4f} "
              f"{values[len(values) // 10]:7.4f} {values[9 * len(values) // 10]:7.4f} "
              f"{sum(same[dtype]) / len(same[dtype]):12.3f}")


if __name__ == "__main__":
    main()
