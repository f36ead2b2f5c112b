#!/usr/bin/env python3
"""The time a measured stack spends outside the kernels a workload models, per modelled launch:
the figure `pipeweave e2e --kernel-overhead-us` takes.

  profile_overhead.py --kernels K.jsonl[.gz] --measured M.csv --workload W.json

K is what `validate_e2e.py run --profile ITER,... --kernels K` writes (each profiled
iteration's kernels and their durations), M the same run's measured iteration times, W the
workload. For each profiled decode iteration: (graph time - sum of kernel durations) is the
gap between kernels, and the kernels that are none of the modelled ones (cuBLAS GEMMs with
their split-K reduce and memset, FlashAttention, RMSNorm, SiLU-and-mul, NCCL; here PyTorch's
copies around the attention call) are time the workload does not hold; both divided by the
iteration's modelled launches. Prints one line per iteration and the median. Prompt
iterations are left out: their graph time also holds the clock drop of sustained load.
Standard library only.
"""
import argparse
import collections
import csv
import gzip
import json
import statistics

MODELLED = ("nvjet", "flash", "rms", "silu", "splitKreduce", "Memset", "nccl")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernels", required=True)
    parser.add_argument("--measured", required=True)
    parser.add_argument("--workload", required=True)
    args = parser.parse_args()
    opener = gzip.open if args.kernels.endswith(".gz") else open
    kernel_us, outside_us = collections.defaultdict(float), collections.defaultdict(float)
    with opener(args.kernels, "rt") as f:
        for line in f:
            record = json.loads(line)
            kernel_us[record["iteration"]] += record["us"]
            if not any(mark in record["kernel"] for mark in MODELLED):
                outside_us[record["iteration"]] += record["us"]
    with open(args.measured) as f:
        measured = {int(r["iteration"]): float(r["measured_us"]) for r in csv.DictReader(f)}
    with open(args.workload) as f:
        iterations = {it["iteration"]: it for it in json.load(f)["iterations"]}
    per_launch = []
    for index in sorted(kernel_us):
        it = iterations[index]
        if it["phase"] != "decode":
            continue
        ops = it["operators"]
        launches = sum(g["count"] for g in ops["gemm"]) + sum(ops[k]["count"] for k in ("attention", "rmsnorm", "siluandmul"))
        launches += sum(c["count"] for c in ops.get("communication", []))
        gap = measured[index] - kernel_us[index]
        value = (gap + outside_us[index]) / launches
        per_launch.append(value)
        print(f"iteration {index}: graph {measured[index]:.0f} us, kernels {kernel_us[index]:.0f} us (gaps {gap:.0f} us), "
              f"not modelled {outside_us[index]:.0f} us, {launches} modelled launches: {value:.2f} us per launch")
    if per_launch:
        print(f"median over {len(per_launch)} decode iterations: {statistics.median(per_launch):.2f} us per launch")


if __name__ == "__main__":
    main()
