#!/usr/bin/env python3
"""Times GEMMs through PyTorch's own calls, to check pipeweave-collect --l2 served against them.

    python3 cuda_kernels/collect_torch_linear.py --shapes SHAPES.csv --out linear.csv [--count 300] [--seed 1]
        [--reps 5] [--warmup 2]

SHAPES.csv is a shape list as served_gemm_shapes.py writes it (dtype,m,n,k first); --count of its
rows, drawn with --seed, are run as a serving engine runs a linear layer: bf16 through
torch.nn.functional.linear (activations m x k, weights n x k), fp8_e4m3 through torch._scaled_mm
with per-tensor scales and a bf16 output (shapes of n and k in multiples of 16: what it takes) (vLLM's fp8 path on Hopper when it uses PyTorch's);
back to back, each call on another copy of the weights (copies spanning twice the L2), no flush,
as pipeweave-collect --l2 served does. Time: CUPTI through the PyTorch profiler, every kernel of
the call, first start to last end; the median of --reps after --warmup. Writes
dtype,m,n,k,duration_us,kernels,kernel (the longest kernel's name) per shape.
"""
import argparse
import csv
import os
import random
import statistics
import sys
import tempfile

import torch

# The trace's kernels in time order, and the names of the marker kernel, as the attention collector reads them
from collect_attention import MARKERS, kernel_events


def make_call(dtype, m, n, k, l2_bytes):
    weight_bytes = n * k * (1 if dtype == "fp8_e4m3" else 2)
    copies = max(1, min(max(2, -(-2 * l2_bytes // weight_bytes)), (1 << 30) // weight_bytes))  # as pipeweave-collect
    if dtype == "bf16":
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        weights = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) for _ in range(copies)]
        state = {"next": 0}

        def call():
            w = weights[state["next"] % copies]
            state["next"] += 1
            torch.nn.functional.linear(x, w)
        return call
    x = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
    weights = [torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn) for _ in range(copies)]
    one = torch.ones((), device="cuda", dtype=torch.float32)
    state = {"next": 0}

    def call():
        w = weights[state["next"] % copies]
        state["next"] += 1
        torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    return call


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()
    with open(args.shapes, newline="") as f:
        rows = [r for r in csv.DictReader(f)]
    rows = [r for r in rows if 2 * int(r["n"]) * int(r["k"]) <= 1 << 30 and 2 * int(r["m"]) * int(r["k"]) <= 1 << 30]
    # torch._scaled_mm takes n and k in multiples of 16 only
    rows = [r for r in rows if r["dtype"] == "bf16" or (int(r["n"]) % 16 == 0 and int(r["k"]) % 16 == 0)]
    picked = random.Random(args.seed).sample(rows, min(args.count, len(rows)))
    l2_bytes = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20)
    with open(args.out, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["dtype", "m", "n", "k", "duration_us", "kernels", "kernel"])
        for start in range(0, len(picked), 20):
            chunk = picked[start:start + 20]
            calls = [make_call(r["dtype"], int(r["m"]), int(r["n"]), int(r["k"]), l2_bytes) for r in chunk]
            torch.cuda.synchronize()
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as profiler:
                for call in calls:
                    for _ in range(args.warmup + args.reps):
                        torch.cuda._sleep(1000)  # a marker between calls (back to back: about 1 us)
                        call()
                torch.cuda.synchronize()
            with tempfile.TemporaryDirectory() as folder:
                path = os.path.join(folder, "trace.json")
                profiler.export_chrome_trace(path)
                events = kernel_events(path)
            groups = []
            for e in events:
                if any(marker in e["name"] for marker in MARKERS):
                    groups.append([])
                elif groups:
                    groups[-1].append(e)
            per = args.warmup + args.reps
            if len(groups) != len(chunk) * per or any(not g for g in groups):
                sys.exit(f"collect_torch_linear: error: {len(groups)} calls in the trace, expected {len(chunk) * per}")
            for i, r in enumerate(chunk):
                timed = groups[i * per + args.warmup:(i + 1) * per]
                durations = [max(e["ts"] + e["dur"] for e in g) - min(e["ts"] for e in g) for g in timed]
                main_kernel = max(timed[0], key=lambda e: e["dur"])["name"]
                writer.writerow([r["dtype"], r["m"], r["n"], r["k"], round(statistics.median(durations), 3),
                                 len(timed[0]), main_kernel])
            print(f"[{start + len(chunk)}/{len(picked)}] torch linear", file=sys.stderr, flush=True)
            del calls
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
