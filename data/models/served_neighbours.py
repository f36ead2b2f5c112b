#!/usr/bin/env python3
"""How a later served-GEMM run's new shapes compare with the earlier rows of the same layer, no model
in between:

    python3 data/models/served_neighbours.py LATER.csv.gz [...] --earlier EARLIER.csv.gz [...]

For each later row (a fresh draw: served_to_measurements.py --exclude, so no shape of the earlier
files) whose weight shape (dtype, n, k) the earlier files hold at a token count within 10% below
and one within 10% above, the time the two neighbours give by linear interpolation in m; prints,
per data type and band of the later time, the rows matched and the median and mean of later /
interpolated. Then the same for a sample of the earlier rows, each against its own neighbours
with itself left out (what interpolation gives where no run changed; its neighbours lie twice as
far apart). A run that sits above the earlier ones where the model is not in question: the part
of a fresh draw's bias that no model trained on the earlier rows could know.
"""
import argparse
import bisect
import collections
import random
import statistics

from served_shift import rows  # a .csv.gz file's rows

BANDS = ((0, 30), (30, 100), (100, float("inf")))  # us, of the row's own time


def interpolated(layer, m, leave_out_self):
    """The time at m between the nearest earlier token counts below and above, each within 10%."""
    i = bisect.bisect_left(layer, (m,))
    below = layer[i - 1] if i > 0 else None
    j = i + 1 if leave_out_self and i < len(layer) and layer[i][0] == m else i
    above = layer[j] if j < len(layer) else None
    if below is None or above is None or below[0] < 0.9 * m or above[0] > 1.1 * m or above[0] == below[0]:
        return None
    return below[1] + (above[1] - below[1]) * (m - below[0]) / (above[0] - below[0])


def report(label, measured, layers, leave_out_self):
    ratios = collections.defaultdict(list)
    for r in measured:
        layer = layers.get((r["dtype"], int(r["n"]), int(r["k"])))
        estimate = interpolated(layer, int(r["m"]), leave_out_self) if layer else None
        if estimate:
            us = float(r["duration_us"])
            band = next(b for b in BANDS if b[0] <= us < b[1])
            ratios[(r["dtype"], band)].append(us / estimate)
    for (dtype, (low, high)), values in sorted(ratios.items()):
        print(f"{label:24} {dtype:9} {low:>4}-{high:<4g} us {len(values):6} rows  median {statistics.median(values):.4f}"
              f"  mean {statistics.fmean(values):.4f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("later", nargs="+")
    parser.add_argument("--earlier", action="append", required=True)
    parser.add_argument("--sample", type=int, default=8000, help="earlier rows scored against their neighbours, per file")
    args = parser.parse_args()
    layers = collections.defaultdict(list)
    earlier = {}
    for path in args.earlier:
        earlier[path] = rows(path)
        for r in earlier[path]:
            layers[(r["dtype"], int(r["n"]), int(r["k"]))].append((int(r["m"]), float(r["duration_us"])))
    for layer in layers.values():
        layer.sort()
    for path in args.later:
        report(path.rsplit("/", 1)[-1].removesuffix(".csv.gz"), rows(path), layers, False)
    sample = random.Random(1)
    for path, measured in earlier.items():
        report("earlier, self left out", sample.sample(measured, min(args.sample, len(measured))), layers, True)


if __name__ == "__main__":
    main()
