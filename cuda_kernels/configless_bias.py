#!/usr/bin/env python3
"""How a GEMM given without a config is predicted, against what cuBLAS ran.

  configless_bias.py EVAL_REPORT.csv MEASURED.csv --gpu NAME --spec SPEC.json [--cli build/pipeweave]

EVAL_REPORT.csv: the per-row CSV of `pipeweave eval --held-out --report DIR` (its GEMM shapes
are the ones checked). MEASURED.csv: the GPU's measurement CSV (every cuBLASLt candidate).
For each held-out shape of that GPU, `pipeweave predict` without a config (the GEMM model
scores the library's candidates and picks the best; the bundled network for GEMMs without a
config answers for it) is set against the measured time of cuBLAS's
first choice (is_default) and of the fastest measured candidate; then how often the chosen
configs use each cluster shape, schedule, orientation and stage count, beside how often the
measured cuBLAS candidates do. A model asked to choose among configs it was never shown
measured tends to choose the ones it under-predicts. Standard library only.
"""
import argparse
import collections
import csv
import json
import math
import re
import statistics
import subprocess
import tempfile


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report")
    parser.add_argument("measured")
    parser.add_argument("--gpu", required=True)
    parser.add_argument("--spec", required=True)
    parser.add_argument("--cli", default="build/pipeweave")
    args = parser.parse_args()

    shapes = set()
    with open(args.report) as f:
        for r in csv.DictReader(f):
            if r["gpu"] != args.gpu or r["family"] != "gemm":
                continue
            keys = dict(item.split("=", 1) for item in r["kernel"].split(":", 1)[1].split(","))
            shapes.add((keys["dtype"], keys["m"], keys["n"], keys["k"]))
    if not shapes:
        raise SystemExit(f"configless_bias.py: {args.report} holds no GEMM row of {args.gpu}")
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as kernels:
        for dtype, m, n, k in sorted(shapes):
            kernels.write(f"gemm:m={m},n={n},k={k},dtype={dtype}\n")
        kernels.flush()
        output = subprocess.run([args.cli, "predict", "--gpu", args.spec, "--json", "--kernels", kernels.name],
                                check=True, capture_output=True, text=True).stdout
    predicted, chosen = {}, collections.defaultdict(collections.Counter)
    config = re.compile(r"tile \d+x\d+x\d+ split_k (\d+) stages (\d+) cluster (\d+x\d+)( swap_ab)? (\S+) raster (\S+)")
    for p in json.loads(output)["predictions"]:
        keys = dict(item.split("=", 1) for item in p["kernel"].split(":", 1)[1].split(","))
        predicted[(keys["dtype"], keys["m"], keys["n"], keys["k"])] = p["latency_us"]
        match = config.match(p["config"])
        if match:
            split, stages, cluster, swap, schedule, raster = match.groups()
            for name, value in (("cluster", cluster), ("schedule", schedule), ("swap_ab", "1" if swap else "0"),
                                ("stages", stages), ("split_k", split), ("raster", raster)):
                chosen[name][value] += 1
    default, fastest, offered = {}, {}, collections.defaultdict(collections.Counter)
    with open(args.measured) as f:
        for r in csv.DictReader(f):
            for name, value in (("cluster", f"{r['cluster_m']}x{r['cluster_n']}"), ("schedule", r["schedule"]),
                                ("swap_ab", r["swap_ab"]), ("stages", r["stages"]), ("split_k", r["split_k"]),
                                ("raster", r["raster"])):
                offered[name][value] += 1
            shape = (r["dtype"], r["m"], r["n"], r["k"])
            if shape not in predicted:
                continue
            time = float(r["duration_us"])
            if r["is_default"] == "1":
                default[shape] = time
            fastest[shape] = min(fastest.get(shape, math.inf), time)
    against_default = [math.log(predicted[s] / default[s]) for s in predicted if s in default]
    against_fastest = [math.log(predicted[s] / fastest[s]) for s in predicted if s in fastest]
    print(f"{args.gpu}: {len(predicted)} held-out GEMM shapes predicted without a config")
    print(f"  against cuBLAS's first choice, measured: mean {100 * statistics.mean(against_default):+.2f}%, "
          f"median {100 * statistics.median(against_default):+.2f}%")
    print(f"  against the fastest measured candidate:  mean {100 * statistics.mean(against_fastest):+.2f}%, "
          f"median {100 * statistics.median(against_fastest):+.2f}%")
    print("  share of the chosen configs | of the measured cuBLAS candidates (all shapes)")
    for name in chosen:
        total, measured = sum(chosen[name].values()), sum(offered[name].values())
        values = sorted(set(chosen[name]) | set(v for v, _ in offered[name].most_common(6)),
                        key=lambda v: -chosen[name][v] - offered[name][v] / measured * total)
        cells = ", ".join(f"{v} {100 * chosen[name][v] / total:.0f}|{100 * offered[name][v] / measured:.0f}%"
                          for v in values[:8])
        print(f"    {name:9s} {cells}")


if __name__ == "__main__":
    main()
