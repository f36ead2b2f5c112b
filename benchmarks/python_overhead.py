"""What calling pipeweave from Python costs over calling it from C++, measured in one session.

Times, from Python, one GEMM with its config (Predictor.predict) and 4,096 GEMMs without configs
from numpy arrays (Predictor.predict_gemms, shapes asked about before), then runs the C++
benchmark of the same calls (BM_BundledGemmWithConfig, BM_BundledGemmBatchNoConfig/4096 in
predict_benchmark) and prints both, with the difference. Bundled models, H100-SXM, one thread.

    python benchmarks/python_overhead.py --cxx build/benchmarks/predict_benchmark [--json out.json] [--csv out.csv]
"""

import argparse
import csv
import json
import statistics
import subprocess
import sys
import time

import numpy as np

import pipeweave as pw


def per_call_us(function, calls, repeats=5):
    """The median over `repeats` of the mean time of `calls` calls, in microseconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            function()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times)


def python_figures():
    predictor = pw.Predictor()
    gpu = pw.GpuSpec("H100-SXM")
    # The C++ benchmark's kernel: m 4096, n 6144, k 4096 with the analytical default config.
    shape = pw.Gemm(m=4096, n=6144, k=4096)
    gemm = pw.Gemm(m=4096, n=6144, k=4096, config=pw.default_gemm_config(shape, gpu))
    single_us = per_call_us(lambda: predictor.predict(gemm, gpu), 20000)

    count = 4096
    m = 1 + 37 * np.arange(count, dtype=np.int64)
    n = np.full(count, 4096, dtype=np.int64)
    k = np.full(count, 4096, dtype=np.int64)
    predictor.predict_gemms(m, n, k, gpu)  # the configs chosen once, as in the C++ benchmark
    batch_us = per_call_us(lambda: predictor.predict_gemms(m, n, k, gpu), 5) / count
    return single_us, batch_us


def cxx_figures(binary):
    output = subprocess.run(
        [binary, "--benchmark_filter=BM_Bundled", "--benchmark_min_time=0.3", "--benchmark_format=json"],
        check=True, capture_output=True, text=True).stdout
    results = {b["name"]: b for b in json.loads(output)["benchmarks"]}
    single = results["BM_BundledGemmWithConfig"]["cpu_time"] / 1000.0
    batch = results["BM_BundledGemmBatchNoConfig/4096"]["ns_per_kernel"] / 1000.0
    return single, batch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cxx", help="build/benchmarks/predict_benchmark, to time the same calls from C++")
    parser.add_argument("--json", help="write the figures as JSON to this file")
    parser.add_argument("--csv", help="write the figures as CSV to this file")
    args = parser.parse_args()
    py_single, py_batch = python_figures()
    rows = [{"call": "predict, one GEMM with its config", "python_us": py_single},
            {"call": "predict_gemms, 4,096 GEMMs without configs, per kernel", "python_us": py_batch}]
    if args.cxx:
        cxx_single, cxx_batch = cxx_figures(args.cxx)
        rows[0]["cxx_us"], rows[1]["cxx_us"] = cxx_single, cxx_batch
        rows[0]["python_minus_cxx_us"] = py_single - cxx_single
        rows[1]["python_over_cxx"] = py_batch / cxx_batch
    for row in rows:
        print(", ".join(f"{key}: {value:.3f}" if isinstance(value, float) else f"{key}: {value}" for key, value in row.items()))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=2)
    if args.csv:
        with open(args.csv, "w", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=sorted({key for row in rows for key in row}))
            writer.writeheader()
            writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
