#!/usr/bin/env python3
"""The four prefill GEMMs of served_sustained.sh side by side, per protocol:

    python3 cuda_kernels/served_sustained.py DIR [--pipeweave build/pipeweave]

Reads DIR's raw records (isolated, served, in_context, sustained, sustained_served; .jsonl or
.jsonl.gz) through `pipeweave collect --from-raw`, writes DIR/<name>.csv and
DIR/in_context_median.csv (each shape's median row of its 25 calls inside the served collection),
and prints each shape's time under each protocol and the totals' ratios. The sustained-load
figures against a protocol come from `pipeweave calibrate --sustained THAT.csv,sustained.csv`.
"""
import argparse
import csv
import gzip
import os
import subprocess
import tempfile

NAMES = ["isolated", "served", "in_context", "sustained", "sustained_served"]


def read_raw(directory, name, pipeweave):
    plain, packed = os.path.join(directory, name + ".jsonl"), os.path.join(directory, name + ".jsonl.gz")
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as raw:
        opener = gzip.open if os.path.exists(packed) else open
        with opener(packed if os.path.exists(packed) else plain, "rt") as f:
            raw.write(f.read())
    out = os.path.join(directory, name + ".csv")
    subprocess.run([pipeweave, "collect", "--from-raw", raw.name, "--out", out], check=True, stdout=subprocess.DEVNULL)
    os.unlink(raw.name)
    with open(out, newline="") as f:
        return list(csv.DictReader(f))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory")
    parser.add_argument("--pipeweave", default="build/pipeweave")
    args = parser.parse_args()
    rows = {name: read_raw(args.directory, name, args.pipeweave) for name in NAMES}
    shapes = [(r["m"], r["n"], r["k"]) for r in rows["isolated"]]
    times = {name: {} for name in NAMES}
    medians = []
    for name in NAMES:
        for shape in shapes:
            found = sorted((r for r in rows[name] if (r["m"], r["n"], r["k"]) == shape), key=lambda r: float(r["duration_us"]))
            if not found:
                raise SystemExit(f"served_sustained: {name} has no row of {'x'.join(shape)}")
            middle = found[(len(found) - 1) // 2]  # the lower median: a measured row
            times[name][shape] = (float(middle["duration_us"]), float(found[0]["duration_us"]), float(found[-1]["duration_us"]),
                                  len(found))
            if name == "in_context":
                medians.append(middle)
    with open(os.path.join(args.directory, "in_context_median.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(medians[0].keys()))
        writer.writeheader()
        writer.writerows(medians)
    print(f"{'m x n x k':>20} " + " ".join(f"{name:>17}" for name in NAMES) + "   (us; in_context: median of N, min-max)")
    for shape in shapes:
        cells = []
        for name in NAMES:
            median, low, high, count = times[name][shape]
            cells.append(f"{median:9.1f}" + (f" ({low:.0f}-{high:.0f}, {count})" if count > 1 else "").ljust(8))
        print(f"{'x'.join(shape):>20} " + " ".join(f"{c:>17}" for c in cells))
    total = {name: sum(times[name][s][0] for s in shapes) for name in NAMES}
    print(f"{'total':>20} " + " ".join(f"{total[name]:17.1f}" for name in NAMES))
    for name in NAMES[1:]:
        print(f"{name} / isolated: {total[name] / total['isolated']:.3f}")
    print(f"sustained / in_context: {total['sustained'] / total['in_context']:.3f}; "
          f"sustained_served / in_context: {total['sustained_served'] / total['in_context']:.3f}")


if __name__ == "__main__":
    main()
