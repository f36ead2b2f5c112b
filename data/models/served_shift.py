#!/usr/bin/env python3
"""How much a later served-GEMM run's shapes measured again differ from the earlier rows:

    python3 data/models/served_shift.py [--quarters] REPEATS.csv.gz EARLIER.csv.gz [...]

REPEATS is served_to_measurements.py's NAME_repeats_<dtype>.csv.gz (the later run's rows whose
shape an --exclude file held), EARLIER those files. Prints, per data type, the rows matched, the
median and mean of later / earlier time, the 10th and 90th percentiles, the share that ran
the same kernel, and the mean of |later / earlier - 1| in percent (what the earlier rows, taken as
a prediction of the later ones, score as MAPE: the difference of two noisy runs, an indication of
the noise a fresh set carries rather than an exact floor):
the shift between runs (and machines) that a fresh set carries. Then that MAPE per band of the
earlier time (short kernels move most). --quarters: also the median of later / earlier over the
rows whose earlier time is 100 us or more, and over each quarter of those rows in REPEATS's order
(the run's, as served_to_measurements.py writes them; up to three left over at the end): whether
the board slowed as the run went on.
"""
import csv
import gzip
import statistics
import sys

from served_report import TIME_BANDS  # the bands the model is reported in, beside these


def rows(path):
    with gzip.open(path, "rt", newline="") as f:
        return list(csv.DictReader(f))


def main():
    args = sys.argv[1:]
    quarters = "--quarters" in args
    args = [a for a in args if a != "--quarters"]
    if len(args) < 2:
        sys.exit(__doc__)
    earlier = {}
    for path in args[1:]:
        for r in rows(path):
            earlier[(r["dtype"], r["m"], r["n"], r["k"])] = r
    ratios, same, earlier_us = {}, {}, {}
    for r in rows(args[0]):
        before = earlier.get((r["dtype"], r["m"], r["n"], r["k"]))
        if before is None:
            sys.exit(f"served_shift: {r['dtype']} {r['m']}x{r['n']}x{r['k']} is in no earlier file")
        ratios.setdefault(r["dtype"], []).append(float(r["duration_us"]) / float(before["duration_us"]))
        same.setdefault(r["dtype"], []).append(r["kernel"] == before["kernel"])
        earlier_us.setdefault(r["dtype"], []).append(float(before["duration_us"]))
    print(f"{'dtype':9} {'rows':>6} {'median':>7} {'mean':>7} {'p10':>7} {'p90':>7} {'same kernel':>12} {'MAPE%':>6}")
    for dtype, values in ratios.items():
        bands = []
        for low, high in TIME_BANDS:
            band = [v for v, us in zip(values, earlier_us[dtype]) if low <= us < high]
            if band:
                bands.append(f"{low}-{high:g} us: {len(band)} rows {100 * statistics.fmean(abs(v - 1) for v in band):.2f}%")
        values = sorted(values)
        print(f"{dtype:9} {len(values):6} {statistics.median(values):7.4f} {statistics.fmean(values):7.4f} "
              f"{values[len(values) // 10]:7.4f} {values[9 * len(values) // 10]:7.4f} "
              f"{sum(same[dtype]) / len(same[dtype]):12.3f} "
              f"{100 * statistics.fmean(abs(v - 1) for v in values):6.2f}")
        print("  MAPE% by the earlier time: " + "; ".join(bands))
        if quarters:  # (values was sorted above: the run's order is ratios[dtype])
            ordered = [v for v, us in zip(ratios[dtype], earlier_us[dtype]) if us >= 100]
            size = len(ordered) // 4
            if size:
                parts = [ordered[q * size:(q + 1) * size] for q in range(4)]
                print(f"  median from 100 us {statistics.median(ordered):.4f} ({len(ordered)} rows); by quarter of the run: " +
                      " ".join(f"{statistics.median(part):.4f} ({len(part)})" for part in parts))


if __name__ == "__main__":
    main()
