#!/usr/bin/env python3
"""Turns collect_fused_moe.py's output into pipeweave's measurement CSVs, one per model family and
routing, for `pipeweave train --op fused_moe` and `pipeweave eval`:

    python3 cuda_kernels/fused_moe/to_measurements.py --gpu H100-SXM --out-dir data/measurements/H100-SXM/fused_moe \
        RUN.csv[.gz] [RUN2.csv[.gz] ...]

Writes <family>.<routing>.csv.gz (expert-parallel rows: <family>.ep.<routing>.csv.gz) with the measurement columns (gpu, dtype, tokens, experts, top_k,
hidden, intermediate, block_m, block_n, block_k, stages, group_m, warps, duration_us = gate-up +
down, is_default = vLLM's default config, zipf = the routing's skew as the op takes it: 0 for
uniform, the collector's exponent 1.2 for skewed, ep = the expert-parallel size, 1 where the run has none) and
the collector's own (model, tp, routing,
experts_touched, max_expert_rows, padded_rows, gemm1_us, gemm2_us, full, run: the input file's
place in the list). Rows of every input are kept, each its own measurement. An input already in
this format (an earlier output) is rewritten with the columns of today, its run numbers kept.
"""
import argparse
import collections
import csv
import gzip
import io
import os

# collect_fused_moe.py's skewed routing: Zipf popularity of this exponent over the experts.
ZIPF = {"uniform": 0, "skewed": 1.2}

COLUMNS = ["gpu", "dtype", "tokens", "experts", "top_k", "hidden", "intermediate", "block_m", "block_n", "block_k",
           "stages", "group_m", "warps", "duration_us", "is_default", "zipf", "ep", "model", "tp", "routing", "experts_touched",
           "max_expert_rows", "padded_rows", "gemm1_us", "gemm2_us", "full", "run"]


def read(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        return list(csv.DictReader(f))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", required=True, help="catalog name of the GPU the runs were measured on")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("runs", nargs="+")
    args = parser.parse_args()
    files = collections.defaultdict(list)
    for run, path in enumerate(args.runs, start=1):
        for r in read(path):
            r.setdefault("ep", "1")  # (runs before expert parallelism)
            if "duration_us" in r:  # an earlier output: the same row with today's columns
                r["zipf"] = ZIPF[r["routing"]]
                files[(r["model"], r["routing"], r["ep"] != "1")].append({c: r[c] for c in COLUMNS})
                continue
            dtype = "fp8_e4m3" if r["dtype"] == "fp8" else r["dtype"]
            row = {"gpu": args.gpu, "dtype": dtype, "tokens": r["tokens"], "experts": r["experts"], "top_k": r["top_k"],
                   "hidden": r["hidden"], "intermediate": r["intermediate"], "block_m": r["BLOCK_SIZE_M"],
                   "block_n": r["BLOCK_SIZE_N"], "block_k": r["BLOCK_SIZE_K"], "stages": r["num_stages"],
                   "group_m": r["GROUP_SIZE_M"], "warps": r["num_warps"],
                   "duration_us": round(float(r["gemm1_us"]) + float(r["gemm2_us"]), 3), "is_default": r["vllm_default"],
                   "zipf": ZIPF[r["routing"]], "ep": r["ep"], "model": r["model"], "tp": r["tp"], "routing": r["routing"], "experts_touched": r["experts_touched"],
                   "max_expert_rows": r["max_expert_rows"], "padded_rows": r["padded_rows"], "gemm1_us": r["gemm1_us"],
                   "gemm2_us": r["gemm2_us"], "full": r["full"], "run": run}
            files[(r["model"], r["routing"], r["ep"] != "1")].append(row)
    os.makedirs(args.out_dir, exist_ok=True)
    for (model, routing, expert_parallel), rows in sorted(files.items()):
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        path = os.path.join(args.out_dir, f"{model}{'.ep' if expert_parallel else ''}.{routing}.csv.gz")
        # mtime 0: the same rows give the same bytes
        with gzip.GzipFile(path, "wb", mtime=0) as out:
            out.write(text.getvalue().encode())
        print(f"{path}: {len(rows)} rows")


if __name__ == "__main__":
    main()
