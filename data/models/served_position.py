#!/usr/bin/env python3
"""The model's signed error by how far into a collection each GEMM was timed:

    python3 data/models/served_position.py --order SHAPES.csv --report DIR/eval.csv [--edges 0,1000,2000,4000,8000,12000,20000]

SHAPES.csv: the list a collect_served.sh run measured (dtype,m,n,k,...), in its order: pipeweave-collect
times a list in order, so a shape's place among its type's rows is how far into the run it was timed
(about 5 ms a shape). DIR/eval.csv: `pipeweave eval --without-configs --report DIR` of that run's rows.
Prints, per data type and band of places, the rows and the mean of predicted / measured - 1, in %.
"""
import argparse
import csv


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--order", required=True)
    parser.add_argument("--report", required=True)
    parser.add_argument("--edges", default="0,1000,2000,4000,8000,12000,20000")
    args = parser.parse_args()
    place, counts = {}, {}
    with open(args.order, newline="") as f:
        for row in csv.DictReader(f):
            dtype = "fp8" if row["dtype"].startswith("fp8") else row["dtype"]
            key = (dtype, row["m"], row["n"], row["k"])
            place.setdefault(key, counts.get(dtype, 0))
            counts[dtype] = counts.get(dtype, 0) + 1
    errors = {}
    with open(args.report, newline="") as f:
        for row in csv.DictReader(f):
            fields = dict(part.split("=", 1) for part in row["kernel"].split(":", 1)[1].split(","))
            dtype = "fp8" if fields["dtype"].startswith("fp8") else fields["dtype"]
            at = place.get((dtype, fields["m"], fields["n"], fields["k"]))
            if at is not None:
                errors.setdefault(dtype, []).append((at, float(row["predicted_us"]) / float(row["measured_us"]) - 1))
    edges = [int(e) for e in args.edges.split(",")]
    for dtype, points in sorted(errors.items()):
        cells = []
        for low, high in zip(edges, edges[1:]):
            band = [e for at, e in points if low <= at < high]
            if band:
                cells.append(f"{low}-{high}: {len(band)} rows {100 * sum(band) / len(band):+.2f}%")
        print(f"{dtype}: " + "; ".join(cells))


if __name__ == "__main__":
    main()
