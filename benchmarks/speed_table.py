#!/usr/bin/env python3
"""The README's speed table, measured in one session on this machine:

    python3 benchmarks/speed_table.py BUILD_DIR [--out DIR]
    python3 benchmarks/speed_table.py --from DIR      # the table again from a kept DIR, nothing measured

Runs BUILD_DIR/benchmarks/predict_benchmark at each vector width the CPU has (the default kernel,
then PIPEWEAVE_SIMD=avx2 where the default is AVX-512, and =baseline; --benchmark_min_time=0.3,
three repetitions, the median), times `BUILD_DIR/pipeweave e2e` of synthetic traces of 20,000 and
100,000 requests (benchmarks/synthetic_trace.py, seed 1) on every core and on one (one run each),
and `pipeweave predict` of one GEMM from process start to end (fifteen runs, the median), then
prints the table as Markdown. --out DIR keeps what was measured (predict_*.json, the benchmark's
output, which --from reads gzip-compressed too; timings.json; speed_table.txt, the table); without it
a temporary folder is removed. A few
minutes; the VM is noisy, so compare figures of one run of this script only.
"""
import argparse
import gzip
import json
import os
import shutil
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
# Issue 21's targets (issue 21's VM, the default build, one core), by row label's start.
TARGETS = {"GEMM with its config": "1.5 us", "batch of 256": "1.3 us", "attention prefill": "3 us",
           "GEMM shape never seen": "30 us", "the same, m counting": "30 us", "the same, the first": "30 us",
           "serving run": "50 ms"}


def fmt(ns):
    """A time with three significant figures (or more, in whole units)."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            value = ns / scale
            return f"{value:.2f} {unit}" if value < 10 else f"{value:.1f} {unit}" if value < 100 else f"{value:.0f} {unit}"
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
                        "--benchmark_format=json"], stdout=f, env=env, check=True)


def read_benchmarks(path):
    """A kept predict_*.json (or .json.gz): the medians' times and floors, per benchmark."""
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        with gzip.open(path + ".gz", "rt") as f:
            report = json.load(f)
    else:
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


def default_kernel(flags):
    """The kernel the dispatch picks on a CPU with these /proc/cpuinfo flags (src/simd/)."""
    if " avx512f" in flags:
        return "AVX-512"
    return "AVX2" if " avx2" in flags and " fma" in flags else "baseline"


def measure(build, out, flags):
    """Runs everything into `out`: predict_<level>.json and timings.json."""
    levels = [None] + (["avx2"] if default_kernel(flags) == "AVX-512" else []) + ["baseline"]
    for simd in levels:
        run_benchmarks(build, simd, out)
    repo = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    cli = os.path.join(build, "pipeweave")
    config = os.path.join(repo, "data", "e2e", "Llama-3.1-8B", "config.json")
    timings = {"levels": [simd or "default" for simd in levels], "default_kernel": default_kernel(flags),
               "cpu": next((line.split(":", 1)[1].strip() for line in flags.splitlines() if line.startswith("model name")), "a CPU"),
               "build_type": "", "date": time.strftime("%Y-%m-%d"), "e2e_s": {}}
    cache = os.path.join(build, "CMakeCache.txt")
    if os.path.exists(cache):
        timings["build_type"] = next((line.split("=", 1)[1].strip() for line in open(cache) if line.startswith("CMAKE_BUILD_TYPE:")), "")
    for requests in (20000, 100000):
        trace = os.path.join(out, f"trace_{requests}.csv")
        subprocess.run([sys.executable, os.path.join(repo, "benchmarks", "synthetic_trace.py"), "--requests", str(requests),
                        "--seed", "1", "--out", trace], check=True)
        print(f"e2e of {requests} requests ...", file=sys.stderr, flush=True)
        base = [cli, "e2e", "--gpu", "H100-SXM", "--model", config, "--trace", trace]
        timings["e2e_s"][str(requests)] = [timed(base), timed(base + ["--threads", "1"])]
        os.remove(trace)
    timings["start_s"] = timed([cli, "predict", "--gpu", "H100-SXM", "gemm:m=4096,n=4096,k=4096"], runs=15)
    with open(os.path.join(out, "timings.json"), "w") as f:
        json.dump(timings, f, indent=1)


def table(out):
    """The Markdown table of what `out` holds."""
    with open(os.path.join(out, "timings.json")) as f:
        timings = json.load(f)
    columns = [read_benchmarks(os.path.join(out, f"predict_{level}.json")) for level in timings["levels"]]
    context = columns[0][2]
    names = [f"default ({timings['default_kernel']})" if level == "default" else level for level in timings["levels"]]
    lines = [f"| what (benchmark) | {' | '.join(names)} | target | floor, {names[0]} |", "|---|" + "---|" * len(names) + "---|---|"]
    floors = columns[0][1]  # (the default kernel's)
    for label, benchmarks in ROWS:
        cells = ["; ".join(fmt(column[0][b]) if b in column[0] else "-" for b in benchmarks) for column in columns]
        target = next((t for prefix, t in TARGETS.items() if label.startswith(prefix)), "")
        floor = "; ".join(fmt(floors[b]) for b in benchmarks if b in floors)
        lines.append(f"| {label} | {' | '.join(cells)} | {target} | {floor} |")
    blank = " | ".join([""] * (len(names) - 1))
    e2e = timings["e2e_s"]
    lines.append(f"| `e2e` of a 20,000-request trace; of 100,000 (`synthetic_trace.py`), one run each: every core; one (`--threads 1`) | "
                 f"{e2e['20000'][0]:.2f} s; {e2e['100000'][0]:.2f} s; {e2e['20000'][1]:.2f} s; {e2e['100000'][1]:.2f} s | {blank} | | |")
    lines.append(f"| `pipeweave predict` of one GEMM, process start to end (median of 15) | {timings['start_s'] * 1e3:.0f} ms | {blank} | | |")
    header = (f"{timings['date']}, {timings['cpu']}, {context.get('num_cpus')} cores at {context.get('mhz_per_cpu')} MHz, "
              f"{timings['build_type'] or 'default'} build; CPU time per call (per kernel in a batch or a ranking), medians of three")
    return header + "\n\n" + "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build", nargs="?")
    parser.add_argument("--out", help="keep what is measured here")
    parser.add_argument("--from", dest="kept", help="print the table of a kept --out folder, measuring nothing")
    args = parser.parse_args()
    if args.kept:
        print(table(args.kept), end="")
        return
    if not args.build:
        parser.error("BUILD_DIR is needed to measure (or --from DIR)")
    flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    out = args.out or tempfile.mkdtemp()
    try:
        os.makedirs(out, exist_ok=True)
        measure(os.path.realpath(args.build), out, flags)
        text = table(out)
        print(text, end="")
        if args.out:
            with open(os.path.join(out, "speed_table.txt"), "w") as f:
                f.write(text)
    finally:
        if not args.out:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
