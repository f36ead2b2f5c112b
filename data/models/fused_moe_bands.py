#!/usr/bin/env python3
"""Fused-MoE errors by expert-parallel ranks and token band, from `pipeweave eval --report DIR`'s eval.csv:

    python3 data/models/fused_moe_bands.py DIR/eval.csv

Per (ep, tokens band): rows, MAPE, median APE and the mean of predicted / measured - 1 (bias); then
every rank count together (`all`), all tokens and from 8 tokens on. A few tokens over many ranks
leave a rank's experts touched or not by the routing's draw, which no model of the shape can know:
the bands show where the error sits.
"""
import collections
import csv
import statistics
import sys

BANDS = ((1, 4), (8, 64), (128, 1024), (2048, 16384))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    groups = collections.defaultdict(list)
    with open(sys.argv[1], newline="") as f:
        for r in csv.DictReader(f):
            if r["family"] != "fused_moe":
                continue
            fields = dict(item.split("=", 1) for item in r["kernel"].split(":", 1)[1].split(","))
            tokens, ep = int(fields["tokens"]), int(fields.get("ep", 1))
            band = next(b for b in BANDS if b[0] <= tokens <= b[1])
            ratio = float(r["predicted_us"]) / float(r["measured_us"])
            groups[(ep, band)].append(ratio)
            groups[(ep, (1, 16384))].append(ratio)
            groups[(0, (1, 16384))].append(ratio)  # ep 0: every rank count
            if tokens >= 8:
                groups[(0, (8, 16384))].append(ratio)
    print(f"{'ep':>3} {'tokens':>12} {'rows':>6} {'MAPE%':>7} {'median%':>8} {'bias%':>7}")
    for (ep, band), ratios in sorted(groups.items(), key=lambda item: (item[0][0] == 0, item[0])):
        errors = [abs(x - 1) * 100 for x in ratios]
        print(f"{ep or 'all':>3} {f'{band[0]}-{band[1]}':>12} {len(ratios):>6} {statistics.mean(errors):>7.2f} "
              f"{statistics.median(errors):>8.2f} {100 * (statistics.mean(ratios) - 1):>+7.2f}")


if __name__ == "__main__":
    main()
