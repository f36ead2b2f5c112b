#!/usr/bin/env python3
"""GEMMs whose operands' leading dimensions are not 16-byte aligned, in the served rows:

    python3 data/models/served_alignment.py [EVAL.csv]
    python3 data/models/served_alignment.py --fit

Hopper's TMA copies need 16-byte aligned strides. F.linear's GEMM (x[m, k] times W[n, k]^T into
y[m, n], bf16 out) has strides k (x and W) and n (y): where k x the input's bytes or n x 2 is not a
multiple of 16, cuBLAS runs a pre-Hopper kernel (the kernel column: cutlass_75 / cutlass_80
tensorop, alignment 1 or 2) instead of its nvjet sm90 ones. In the served rows that is one
layer alone, Granite-3.1-8B's lm_head (vocab 49,155 split over TP 1-8: n = 49,155, 24,578, 12,289,
6,145; k = 4,096), bf16 (fp8 rows need 16-byte strides, so none were measured). Prints, per GPU,
file and the stride's alignment in bytes, the rows, the kernels cuBLAS ran, and the best rates
they reached (TFLOP/s over the rows of m >= 1,024; GB/s of W read over those of m <= 64), beside
the aligned rows of the same k. With EVAL.csv (`pipeweave eval --report DIR`'s eval.csv over
some of these rows), also the mean signed error of the predictions on the misaligned rows and the
rest: a shape-only model that takes every GEMM for aligned answers them several times too fast.

--fit: the rates that the pre-Hopper kernels reached on seeds 1-3's misaligned bf16 rows of both
GPUs (from the m where cuBLAS leaves its GEMV-style kernels, FIRST_M), per stride alignment: the
median multiply-add work (2mnk flops) over the rows of m >= 1,024 as a share of the GPU's 16-bit
tensor rate, and the median bytes moved (x, W and y once) per SM and clock over those of m <= 64
(of data/gpus/<GPU>.calibrated.json); then the two-rate model (time = the longer of the two at
those rates), scored on those rows of each file, the seed-4 and seed-5 rows trained on by nothing. The library's
kMisalignedGemmRates (include/pipeweave/ops/gemm.hpp) are these figures.
"""
import collections
import csv
import gzip
import math
import re
import statistics
import sys

FILES = [(gpu, name) for gpu in ("H100-SXM", "H200-SXM")
         for name in ("gemm_served_bf16", "gemm_served_fp8", "gemm_served_seed4_bf16", "gemm_served_seed4_fp8",
                      "gemm_served_seed5_bf16", "gemm_served_seed5_fp8")]


def alignment_bytes(n, k, in_bytes):
    """The largest power of two up to 16 that divides both strides, in bytes."""
    stride_gcd = 0
    for stride in (k * in_bytes, n * 2):
        stride_gcd = math.gcd(stride_gcd, stride)
    align = 1
    while align < 16 and stride_gcd % (2 * align) == 0:
        align *= 2
    return align


# cuBLAS answers the fewest rows with GEMV-style kernels (gemv2T at m = 1, gemmSN_TN at m 2-9 with
# 2-byte strides), which read as fast as aligned ones: the pre-Hopper tensor kernels run from here.
FIRST_M = {2: 10, 4: 2, 8: 2}


def spec(gpu):
    import json
    with open(f"data/gpus/{gpu}.calibrated.json") as f:
        d = json.load(f)
    sm_clocks = d["sm_count"] * d["sm_clock_mhz"] * 1e6  # SM-clocks a second
    return sm_clocks, d["tensor_flops_per_clk_per_sm"]["fp16_bf16"]


def misaligned_rows(gpu, name):
    try:
        f = gzip.open(f"data/measurements/{gpu}/{name}.csv.gz", "rt", newline="")
    except FileNotFoundError:
        return []
    out = []
    for r in csv.DictReader(f):
        m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
        align = alignment_bytes(n, k, 2)
        if r["dtype"] == "bf16" and align < 16 and m >= FIRST_M[align]:
            out.append((align, m, n, k, float(r["duration_us"]) * 1e-6))
    return out


def fit():
    shares, moved = collections.defaultdict(list), collections.defaultdict(list)
    for gpu in ("H100-SXM", "H200-SXM"):
        sm_clocks, tensor_rate = spec(gpu)
        for align, m, n, k, seconds in misaligned_rows(gpu, "gemm_served_bf16"):
            if m >= 1024:
                shares[align].append(2 * m * n * k / seconds / sm_clocks / tensor_rate)
            if m <= 64:
                moved[align].append((n * k + m * k + m * n) * 2 / seconds / sm_clocks)
    rates = {align: (statistics.median(shares[align]), statistics.median(moved[align])) for align in sorted(shares)}
    rates.setdefault(8, rates[4])  # never measured: the 4-byte rates, as the library takes them
    for align, (share, byte_rate) in rates.items():
        print(f"{align}-byte strides, m >= {FIRST_M[align]}: {share:.4f} of the 16-bit tensor rate and "
              f"{byte_rate:.2f} bytes per SM per clock ({len(shares[align])} and {len(moved[align])} rows)")
    for gpu, name in FILES:
        rows = misaligned_rows(gpu, name)
        if not rows:
            continue
        sm_clocks, tensor_rate = spec(gpu)
        errors = []
        for align, m, n, k, seconds in rows:
            share, byte_rate = rates[align]
            predicted = max(2 * m * n * k / (share * tensor_rate), (n * k + m * k + m * n) * 2 / byte_rate) / sm_clocks
            errors.append((predicted - seconds) / seconds * 100)
        print(f"{gpu} {name:24} rows {len(errors):4}  two-rate model MAPE {statistics.fmean(abs(e) for e in errors):5.1f}%  "
              f"bias {statistics.fmean(errors):+5.1f}%")


def main():
    if sys.argv[1:] == ["--fit"]:
        fit()
        return
    for gpu, name in FILES:
        try:
            f = gzip.open(f"data/measurements/{gpu}/{name}.csv.gz", "rt", newline="")
            rows = list(csv.DictReader(f))
        except FileNotFoundError:
            continue
        groups = collections.defaultdict(list)
        for r in rows:
            n, k, m = int(r["n"]), int(r["k"]), int(r["m"])
            in_bytes = 1 if r["dtype"].startswith("fp8") else 2
            align = alignment_bytes(n, k, in_bytes)
            if align < 16 or k == 4096:
                groups[align].append((m, n, k, float(r["duration_us"]), r["kernel"], in_bytes))
        for align in sorted(groups):
            g = groups[align]
            kernels = collections.Counter(re.sub(r"^_Z\w*?(cutlass_\d+|nvjet_sm\d+|gemm\w{0,12}).*", r"\1", kern)[:24] for *_, kern, _ in g)
            tflops = [2 * m * n * k / us / 1e6 for m, n, k, us, _, _ in g if m >= 1024]
            gbs = [n * k * b / us / 1e3 for m, n, k, us, _, b in g if m <= 64]
            label = f"{align}-byte strides" if align < 16 else "aligned, k = 4096"
            print(f"{gpu} {name:24} {label:18} rows {len(g):6}  best TFLOP/s {max(tflops, default=0):6.0f}  "
                  f"best GB/s {max(gbs, default=0):6.0f}  kernels {dict(kernels.most_common(3))}")
    if len(sys.argv) > 1:
        errors = collections.defaultdict(list)
        with open(sys.argv[1], newline="") as f:
            for r in csv.DictReader(f):
                m, n, k = map(int, re.search(r"m=(\d+),n=(\d+),k=(\d+)", r["kernel"]).groups())
                in_bytes = 1 if "dtype=fp8" in r["kernel"] else 2
                measured, predicted = float(r["measured_us"]), float(r["predicted_us"])
                errors[alignment_bytes(n, k, in_bytes) < 16].append((predicted - measured) / measured * 100)
        for misaligned, e in sorted(errors.items()):
            print(f"{'misaligned' if misaligned else 'aligned':10} rows {len(e):6}  MAPE {statistics.fmean(abs(x) for x in e):6.2f}%  "
                  f"bias {statistics.fmean(e):+7.2f}%")


if __name__ == "__main__":
    main()
