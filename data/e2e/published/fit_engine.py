#!/usr/bin/env python3
"""Fits SGLang's engine terms to the published H100 serving runs: the host time per iteration
and the gap between consecutive kernels of a decode iteration.

Each run's workload is predicted with `pipeweave e2e --engine sglang` while the two terms are
zero (--engine-terms 0,0 below: the engine's extra kernels and its decode attention rule stay
on), which gives each decode iteration's kernel time and launch count; the median decode
iteration measured (SGLang's bench_one_batch, median over the run's repetitions) is then
fitted as  kernels + iteration_us + kernel_gap_us x launches  by least squares over the runs
(both terms kept >= 0). Prompt iterations are left out of the fit: their GPU time is seconds,
so neither term shows there. Prints the fit, its error per run, and each run's error with the
terms fitted on the other runs (leave one run out).

    python3 data/e2e/published/fit_engine.py [--archive PATH] [--pipeweave build/pipeweave]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import score_runs  # noqa: E402


def least_squares(rows):
    """min sum (y - a - b x)^2 over a, b >= 0; rows of (x, y)."""
    n = len(rows)
    sx = sum(x for x, _ in rows); sy = sum(y for _, y in rows)
    sxx = sum(x * x for x, _ in rows); sxy = sum(x * y for x, y in rows)
    det = n * sxx - sx * sx
    candidates = []
    if det > 0:
        b = (n * sxy - sx * sy) / det
        a = (sy - b * sx) / n
        if a >= 0 and b >= 0:
            candidates.append((a, b))
    candidates.append((max(0.0, sy / n), 0.0))                  # b = 0
    candidates.append((0.0, max(0.0, sxy / sxx if sxx else 0)))  # a = 0
    return min(candidates, key=lambda ab: sum((y - ab[0] - ab[1] * x) ** 2 for x, y in rows))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--archive", default=score_runs.DEFAULT_ARCHIVE)
    parser.add_argument("--pipeweave", default=os.path.join(score_runs.ROOT, "build", "pipeweave"))
    parser.add_argument("extra", nargs="*", help="flags passed to pipeweave e2e (after --), e.g. --kernel-model FILE")
    args = parser.parse_args()
    points = []
    with tarfile.open(args.archive) as archive, tempfile.TemporaryDirectory() as tmp:
        runs = score_runs.measured_runs(archive)
        for (gpu, run, tp), m in sorted(runs.items(), key=lambda item: (item[0][2], item[0][1])):
            member = score_runs.workload_name(run, tp, "fa3")
            path = os.path.join(tmp, os.path.basename(member))
            with open(path, "wb") as out:
                out.write(archive.extractfile(member).read())
            command = [args.pipeweave, "e2e", "--gpu", "H100-SXM", "--workload", path, "--engine", "sglang",
                       "--engine-terms", "0,0", "--json", *args.extra]
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                sys.exit(f"{' '.join(command)}: {result.stderr.strip()}")
            p = json.loads(result.stdout)
            decode = [it for it in p["per_iteration"] if it["phase"] == "decode"]
            kernels = statistics.median(it["kernels_us"] for it in decode)
            launches = statistics.median(it["launches"] for it in decode)
            points.append({"run": run, "tp": tp, "kernels_us": kernels, "launches": launches,
                           "measured_us": m["decode_s"] * 1e6})
    fit = least_squares([(q["launches"], q["measured_us"] - q["kernels_us"]) for q in points])
    print(f"fitted on {len(points)} runs: iteration_us = {fit[0]:.1f}, kernel_gap_us = {fit[1]:.3f}")
    print(f"{'run':<26} {'tp':>2} {'launches':>8} {'kernels ms':>10} {'measured ms':>11} {'fit ms':>8} {'err':>7} {'left out':>8}")
    errors, held_out = [], []
    for i, q in enumerate(points):
        predicted = q["kernels_us"] + fit[0] + fit[1] * q["launches"]
        others = least_squares([(o["launches"], o["measured_us"] - o["kernels_us"]) for j, o in enumerate(points) if j != i])
        loo = q["kernels_us"] + others[0] + others[1] * q["launches"]
        e, l = 100 * (predicted / q["measured_us"] - 1), 100 * (loo / q["measured_us"] - 1)
        errors.append(abs(e)), held_out.append(abs(l))
        print(f"{q['run']:<26} {q['tp']:>2} {q['launches']:>8.0f} {q['kernels_us'] / 1e3:>10.2f} {q['measured_us'] / 1e3:>11.2f} "
              f"{predicted / 1e3:>8.2f} {e:>+6.1f}% {l:>+7.1f}%")
    print(f"median decode iteration: mean |error| {statistics.mean(errors):.2f}% fitted, {statistics.mean(held_out):.2f}% "
          f"with each run left out of its own fit")


if __name__ == "__main__":
    main()
