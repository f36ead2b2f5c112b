#!/usr/bin/env python3
"""Predicts the published serving runs and compares them with what was measured.

The published archive (../shared/public-data/pipeweave-published.tar.xz) holds the workloads
of the published end-to-end study and, for the H100, the measured runs (e2e_real_H100/*.jsonl:
SGLang's bench_one_batch per run and repetition: prefill latency, median decode iteration,
total). Each run is predicted with `pipeweave e2e --gpu GPU --workload FILE --json` plus any
flags given after `--`, and compared per run (the median over its repetitions).

    python3 data/e2e/published/score_runs.py [--archive PATH] [--pipeweave build/pipeweave]
        [--gpu H100-SXM] [--attention fa3|fa2] [--csv out.csv] [--markdown] [-- extra e2e flags]
"""
import argparse
import csv
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
DEFAULT_ARCHIVE = os.path.join(ROOT, "..", "shared", "public-data", "pipeweave-published.tar.xz")


def measured_runs(archive):
    """(run_name, tp) -> medians over repetitions, from every e2e_real_*/*.jsonl in the archive."""
    runs = {}
    for member in archive.getmembers():
        name = member.name
        if "e2e_real_" not in name or not name.endswith(".jsonl"):
            continue
        base = os.path.basename(name)  # e2e_H100.jsonl, e2e_tp2_H100.jsonl
        tp = int(base.split("_tp")[1].split("_")[0]) if "_tp" in base else 1
        gpu = base.rsplit("_", 1)[1].removesuffix(".jsonl")
        rows = [json.loads(line) for line in archive.extractfile(member).read().decode().splitlines() if line.strip()]
        by_run = {}
        for row in rows:
            by_run.setdefault(row["run_name"], []).append(row)
        for run, reps in by_run.items():
            runs[(gpu, run, tp)] = {
                "repetitions": len(reps),
                "prefill_s": statistics.median(r["prefill_latency"] for r in reps),
                "decode_s": statistics.median(r["median_decode_latency"] for r in reps),
                "total_s": statistics.median(r["total_latency"] for r in reps),
                "batch_size": reps[0]["batch_size"],
                "output_len": reps[0]["output_len"],
            }
    return runs


def workload_name(run, tp, attention):
    trace = run.rsplit("-", 1)[1]
    model = run[: len(run) - len(trace) - 1]
    return f"./workloads/{model}_{trace}_{attention}_tp{tp}_pp1.json"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--archive", default=DEFAULT_ARCHIVE)
    parser.add_argument("--pipeweave", default=os.path.join(ROOT, "build", "pipeweave"))
    parser.add_argument("--gpu", default=None, help="the --gpu given to e2e (default: the run's GPU by catalog name)")
    parser.add_argument("--attention", default="fa3", choices=["fa3", "fa2"],
                        help="which of the archive's two workloads of a run to predict (SGLang's default on Hopper: fa3)")
    parser.add_argument("--csv", help="write the per-run table here")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("extra", nargs="*", help="flags passed to pipeweave e2e (after --)")
    args = parser.parse_args()

    catalog = {"H100": "H100-SXM"}
    rows = []
    with tarfile.open(args.archive) as archive, tempfile.TemporaryDirectory() as tmp:
        runs = measured_runs(archive)
        if not runs:
            sys.exit(f"{args.archive}: no e2e_real_*/*.jsonl")
        for (gpu, run, tp), m in sorted(runs.items(), key=lambda item: (item[0][2], item[0][1])):
            member = workload_name(run, tp, args.attention)
            path = os.path.join(tmp, os.path.basename(member))
            with open(path, "wb") as out:
                out.write(archive.extractfile(member).read())
            command = [args.pipeweave, "e2e", "--gpu", args.gpu or catalog.get(gpu, gpu), "--workload", path, "--json", *args.extra]
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                sys.exit(f"{' '.join(command)}: {result.stderr.strip()}")
            p = json.loads(result.stdout)
            row = {"gpu": gpu, "run": run, "tp": tp, "workload": os.path.basename(member), "repetitions": m["repetitions"]}
            for key, predicted_us, measured_s in (("prefill", p["prefill_us"], m["prefill_s"]),
                                                 ("decode", p["median_decode_iteration_us"], m["decode_s"]),
                                                 ("total", p["total_us"], m["total_s"])):
                row[f"{key}_measured_ms"] = measured_s * 1e3
                row[f"{key}_predicted_ms"] = predicted_us / 1e3
                row[f"{key}_error_pct"] = 100 * (predicted_us / 1e6 - measured_s) / measured_s
            rows.append(row)

    keys = ("prefill", "decode", "total")
    if args.csv:
        with open(args.csv, "w", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=list(rows[0].keys()))
            writer.writeheader()
            for row in rows:
                writer.writerow({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in row.items()})
    if args.markdown:
        print("| run | TP | prefill measured / predicted (ms) | error | median decode (ms) | error | total (ms) | error |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            cells = [f"{r['run']}", str(r["tp"])]
            for k in keys:
                cells.append(f"{r[k + '_measured_ms']:.1f} / {r[k + '_predicted_ms']:.1f}" if k != "decode"
                             else f"{r[k + '_measured_ms']:.2f} / {r[k + '_predicted_ms']:.2f}")
                cells.append(f"{r[k + '_error_pct']:+.1f}%")
            print("| " + " | ".join(cells) + " |")
    else:
        print(f"{'run':<26} {'tp':>2} " + " ".join(f"{k + ' meas/pred (ms)':>28} {'err':>7}" for k in keys))
        for r in rows:
            print(f"{r['run']:<26} {r['tp']:>2} " + " ".join(
                f"{r[k + '_measured_ms']:>13.2f} {r[k + '_predicted_ms']:>13.2f} {r[k + '_error_pct']:>+6.1f}%" for k in keys))
    means = {k: statistics.mean(abs(r[k + "_error_pct"]) for r in rows) for k in keys}
    print(f"mean |error| over {len(rows)} runs: " + ", ".join(f"{k} {v:.1f}%" for k, v in means.items()) +
          f"; all three {statistics.mean(means.values()):.1f}%")


if __name__ == "__main__":
    main()
