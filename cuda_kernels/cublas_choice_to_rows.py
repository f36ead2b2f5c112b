#!/usr/bin/env python3
"""Turns a collect_cublas_choice.sh run into one file of cuBLAS's choices, both data types:

    python3 cuda_kernels/cublas_choice_to_rows.py --cli build/pipeweave --shapes SHAPES.csv --gpu H200-SXM RUN_DIR OUT.csv.gz

RUN_DIR holds choice_{bf16,fp8}.jsonl.gz; SHAPES.csv is the run's shape list (its shapes.csv, or
served_gemm_shapes.py run again with the run's --seed, --per-layer and --random: the same list).
Each raw record becomes a row through `pipeweave collect --from-raw`; a shape's config is the
kernel's (tile, split-K, stages, cluster, swap, schedule, raster), written as one token
TILE_MxTILE_NxTILE_K/SPLIT_K/STAGES/CLUSTER_MxCLUSTER_N/SWAP_AB/SCHEDULE/RASTER ("-": no call was
made, or nothing names the tile). OUT has one row per shape of the list that a call reached: m, n,
k, family, then bf16 and fp8, sorted by n, k and m (it compresses best so). The CHECK rows that lead
each list (family "check", shapes of the GPU's committed served rows) are not written: their kernel
is compared with the one data/measurements/GPU/gemm_served*_{bf16,fp8}.csv.gz recorded, and the
agreement printed.
"""
import argparse
import csv
import gzip
import os
import sys

import served_to_measurements

CONFIG = ("tile_m", "tile_n", "tile_k", "split_k", "stages", "cluster_m", "cluster_n", "swap_ab", "schedule", "raster")


def token(row):
    """A row's config as one token; "-" where nothing names its tile."""
    if row["config_source"] == "unknown":
        return "-"
    r = row
    return (f"{r['tile_m']}x{r['tile_n']}x{r['tile_k']}/{r['split_k']}/{r['stages']}/{r['cluster_m']}x{r['cluster_n']}/"
            f"{r['swap_ab']}/{r['schedule']}/{r['raster']}")


def raw_rows(cli, path):
    header, rows = served_to_measurements.raw_rows(cli, path)
    return [dict(zip(header, r)) for r in rows]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir")
    parser.add_argument("out")
    parser.add_argument("--cli", required=True)
    parser.add_argument("--shapes", required=True)
    parser.add_argument("--gpu", required=True)
    args = parser.parse_args()
    families = {}  # (m, n, k) -> family, the list's first
    with open(args.shapes, newline="") as f:
        for r in csv.DictReader(f):
            families.setdefault((r["m"], r["n"], r["k"]), r["family"])
    chosen = {}  # (m, n, k) -> {dtype: token}
    for dtype in ("bf16", "fp8"):
        rows = raw_rows(args.cli, os.path.join(args.run_dir, f"choice_{dtype}.jsonl.gz"))
        recorded = {}
        for path in sorted(os.listdir(os.path.join("data/measurements", args.gpu))):
            if path.startswith("gemm_served") and path.endswith(f"_{dtype}.csv.gz") and "repeats" not in path:
                with gzip.open(os.path.join("data/measurements", args.gpu, path), "rt", newline="") as f:
                    for r in csv.DictReader(f):
                        if r["candidate"] == "0":
                            recorded.setdefault((r["m"], r["n"], r["k"]), r["kernel"])
        compared = same = 0
        for r in rows:
            shape = (r["m"], r["n"], r["k"])
            if shape in recorded:
                compared += 1
                same += r["kernel"] == recorded[shape]
            if shape in families:
                chosen.setdefault(shape, {}).setdefault(dtype, token(r))
        print(f"{dtype}: {len(rows)} calls; the kernel recorded in the served rows on {same} of the {compared} shapes they share")
    with gzip.open(args.out, "wt", newline="", compresslevel=9) as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["m", "n", "k", "family", "bf16", "fp8"])
        for shape in sorted(chosen, key=lambda s: (int(s[1]), int(s[2]), int(s[0]))):
            writer.writerow([*shape, families[shape], chosen[shape].get("bf16", "-"), chosen[shape].get("fp8", "-")])
    print(f"{len(chosen)} shapes -> {args.out}")


if __name__ == "__main__":
    sys.exit(main())
