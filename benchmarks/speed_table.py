#!/usr/bin/env python3
"""The README's speed table, measured in one session on this machine:

    python3 benchmarks/speed_table.py BUILD_DIR [--out DIR]

Runs BUILD_DIR/benchmarks/predict_benchmark at each vector width the CPU has (the default kernel,
then PIPEWEAVE_SIMD=avx2 and =baseline; --benchmark_min_time=0.3, three repetitions, the median),
times `BUILD_DIR/pipeweave e2e` of synthetic traces of 20,000 and 100,000 requests
(benchmarks/synthetic_trace.py, seed 1) on every core and on one, and `pipeweave predict` of one
GEMM from process start to end (fifteen runs, the median), then prints the table as Markdown. --out
DIR keeps the benchmark's JSON and the timings (speed_table.txt: the table again). A few minutes;
the VM is noisy, so compare figures of one run of this script only.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

# (row label, benchmark names whose medians the row shows, joined by "; "; a name ending in
# "/N" after "per" in PER_KERNEL is divided by N: the time per kernel of a batch)
ROWS = [
    ("GEMM, analytical stage only (`PredictAnalytical/0`)", ["BM_PredictAnalytical/0"]),
    ("GEMM with its config (`PredictTrained/0`)", ["BM_PredictTrained/0"]),
    ("GEMM without a config, shape seen before; bundled bf16 model without, with its second view "
     "(`PredictTrainedGemmNoConfig`, `BundledGemmNoConfig/0`, `/1`)",
     ["BM_PredictTrainedGemmNoConfig", "BM_BundledGemmNoConfig/0", "BM_BundledGemmNoConfig/1"]),
    ("batch of 256 GEMMs; of 4,096, per kernel (`PredictTrainedGemmBatch`)",
     ["BM_PredictTrainedGemmBatch/256", "BM_PredictTrainedGemmBatch/4096"]),
    ("`rank` of 48 candidates, per candidate; four-network ensemble (`RankGemmCandidates*`)",
     ["BM_RankGemmCandidates/48", "BM_RankGemmCandidatesEnsemble/48"]),
    ("64-64-32 network: one GEMM; batch of 256, per kernel (`PredictTrainedSmallGemm*`)",
     ["BM_PredictTrainedSmallGemm", "BM_PredictTrainedSmallGemmBatch/256"]),
    ("attention prefill 4 x 2,048 tokens, 32 heads: demand alone; with a network (`Demand/1`, `PredictTrained/1`)",
     ["BM_Demand/1", "BM_PredictTrained/1"]),
    ("attention, a decode step of 256 sequences at 256 context lengths (`PredictTrainedDecodeBatch`)",
     ["BM_PredictTrainedDecodeBatch"]),
    ("GEMM shape never seen, no config, bundled models: a new m between two grid points searched before "
     "(`BestGemmConfigBetweenGridBundled`)", ["BM_BestGemmConfigBetweenGridBundled"]),
    ("the same, m counting through 256 new sizes of one layer: m 1-256; m 1,000-1,255 (`BestGemmConfigFirstTimeBundled`)",
     ["BM_BestGemmConfigFirstTimeBundled/1", "BM_BestGemmConfigFirstTimeBundled/1000"]),
    ("the same, the first question about a layer, off the grid (`BestGemmConfigNewLayerBundled`)",
     ["BM_BestGemmConfigNewLayerBundled"]),
    ("the full config search of one shape, random weights (`FullSearchGemmConfig`)", ["BM_FullSearchGemmConfig"]),
    ("serving run, Llama-3.1-8B, 64 requests, 1,983 iterations: configs remembered; chosen afresh (`PredictWorkload`)",
     ["BM_PredictWorkload/0", "BM_PredictWorkload/1"]),
    ("fused MoE, the bundled model's shape: four 512-256-128 networks; four of 256-128-64 (`PredictFusedMoeEnsemble`)",
     ["BM_PredictFusedMoeEnsemble/512", "BM_PredictFusedMoeEnsemble/256"]),
]
PER_KERNEL = ("BM_PredictTrainedGemmBatch/", "BM_PredictTrainedSmallGemmBatch/", "BM_RankGemmCandidates")
# Issue 21's targets (this project's VM, default build, one core), by row label's start.
TARGETS = {"GEMM with its config": "1.5 us", "batch of 256": "1.3 us", "attention prefill": "3 us",
           "GEMM shape never seen": "30 us", "the same, m counting": "30 us", "the same, the first": "30 us",
           "serving run": "50 ms"}


def fmt(ns):
    """A time in the unit that keeps three figures."""
    if ns >= 1e6:
        return f"{ns / 1e6:.1f} ms" if ns < 1e8 else f"{ns / 1e9:.2f} s"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} us" if ns < 1e4 else f"{ns / 1e3:.1f} us" if ns < 1e5 else f"{ns / 1e6:.2f} ms"
    return f"{ns:.0f} ns"


def run_benchmarks(build, simd, out):
    env = dict(os.environ)
    env.pop("PIPEWEAVE_SIMD", None)
    if simd:
        env["PIPEWEAVE_SIMD"] = simd
    path = os.path.join(out, f"predict_{simd or 'default'}.json")
    print(f"predict_benchmark, {simd or 'the default kernel'} ...", file=sys.stderr, flush=True)
    with open(path, "w") as f:
        subprocess.run([os.path.join(build, "benchmarks", "predict_benchmark"), "--benchmark_min_time=0.3",
                        "--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true",
                        "--benchmark_format=json"], stdout=f, stderr=subprocess.DEVNULL, env=env, check=True)
    with open(path) as f:
        report = json.load(f)
    medians = {b["run_name"]: b for b in report["benchmarks"] if b.get("aggregate_name") == "median"}
    times, floors = {}, {}  # (floor_ns: the benchmark's own floor of the networks' multiply-adds, where it has one)
    for name, b in medians.items():
        per = int(name.rsplit("/", 1)[1]) if name.startswith(PER_KERNEL) else 1
        times[name] = b["cpu_time"] * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]] / per
        if "floor_ns" in b:
            floors[name] = b["floor_ns"] / per
    return times, floors, report["context"]


def timed(command, runs=1):
    """Wall seconds of `command` (stdout discarded), the median of `runs`."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build")
    parser.add_argument("--out", help="keep the benchmark's JSON and the table here")
    args = parser.parse_args()
    build = os.path.realpath(args.build)
    repo = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    out = args.out or tempfile.mkdtemp()
    os.makedirs(out, exist_ok=True)
    flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    levels = [None] + (["avx2"] if " avx512f" in flags else []) + ["baseline"]
    columns = [run_benchmarks(build, simd, out) for simd in levels]
    context = columns[0][2]
    names = ["default kernel" if not simd else simd for simd in levels]

    cli = os.path.join(build, "pipeweave")
    config = os.path.join(repo, "data", "e2e", "Llama-3.1-8B", "config.json")
    e2e = {}
    for requests in (20000, 100000):
        trace = os.path.join(out, f"trace_{requests}.csv")
        subprocess.run([sys.executable, os.path.join(repo, "benchmarks", "synthetic_trace.py"), "--requests", str(requests),
                        "--seed", "1", "--out", trace], check=True)
        print(f"e2e of {requests} requests ...", file=sys.stderr, flush=True)
        base = [cli, "e2e", "--gpu", "H100-SXM", "--model", config, "--trace", trace]
        e2e[requests] = (timed(base), timed(base + ["--threads", "1"]))
        os.remove(trace)
    start = timed([cli, "predict", "--gpu", "H100-SXM", "gemm:m=4096,n=4096,k=4096"], runs=15)

    lines = [f"| what (benchmark) | {' | '.join(names)} | target | floor, {names[0]} |", "|---|" + "---|" * len(names) + "---|---|"]
    for label, benchmarks in ROWS:
        cells = ["; ".join(fmt(column[0][b]) if b in column[0] else "-" for b in benchmarks) for column in columns]
        target = next((t for prefix, t in TARGETS.items() if label.startswith(prefix)), "")
        floors = columns[0][1]
        floor = "; ".join(fmt(floors[b]) for b in benchmarks if b in floors) if any(b in floors for b in benchmarks) else ""
        lines.append(f"| {label} | {' | '.join(cells)} | {target} | {floor} |")
    blank = " | ".join([""] * (len(names) - 1))
    lines.append(f"| `e2e` of a 20,000-request trace; of 100,000 (`synthetic_trace.py`): every core; one (`--threads 1`) | "
                 f"{e2e[20000][0]:.2f} s; {e2e[100000][0]:.2f} s; {e2e[20000][1]:.2f} s; {e2e[100000][1]:.2f} s | {blank} | | |")
    lines.append(f"| `pipeweave predict` of one GEMM, process start to end (median of 15) | {start * 1e3:.0f} ms | {blank} | | |")
    model = next((line.split(":", 1)[1].strip() for line in flags.splitlines() if line.startswith("model name")), "a CPU")
    build_type = next((line.split("=", 1)[1] for line in open(os.path.join(build, "CMakeCache.txt"))
                       if line.startswith("CMAKE_BUILD_TYPE:")), "").strip()
    header = (f"{time.strftime('%Y-%m-%d')}, {model}, {context.get('num_cpus')} cores at {context.get('mhz_per_cpu')} MHz, "
              f"{build_type or 'default'} build; CPU time per call (per kernel in a batch or a ranking), medians of three")
    table = header + "\n\n" + "\n".join(lines) + "\n"
    print(table)
    with open(os.path.join(out, "speed_table.txt"), "w") as f:
        f.write(table)


if __name__ == "__main__":
    main()
