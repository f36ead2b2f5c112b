"""An autotuner's question: which of a GEMM's configs runs fastest? Ranked without running any.

Enumerates the configs a GEMM library would consider (pipeweave.gemm_candidates), ranks them with
the bundled models, and compares the predicted best with the analytical default config.

    python examples/python/autotune_gemm.py [--m 64] [--n 4096] [--k 4096] [--dtype bf16] [--gpu H100-SXM] [--top 5] [--csv out.csv]
"""

import argparse
import csv

import pipeweave as pw


def main():
    parser = argparse.ArgumentParser(description="rank a GEMM's candidate configs by predicted latency")
    parser.add_argument("--m", type=int, default=64)
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--gpu", default="H100-SXM")
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--csv", help="write every candidate's prediction as CSV to this file")
    args = parser.parse_args()

    predictor, gpu = pw.Predictor(), pw.GpuSpec(args.gpu)
    shape = pw.Gemm(m=args.m, n=args.n, k=args.k, dtype=args.dtype)
    configs = pw.gemm_candidates(shape, gpu)
    candidates = [pw.Gemm(m=args.m, n=args.n, k=args.k, dtype=args.dtype, config=c) for c in configs]
    ranked = predictor.rank(candidates, gpu)
    print(f"{shape} on {gpu.name}: {len(candidates)} candidate configs")
    for place, entry in enumerate(ranked[: args.top], start=1):
        c = configs[entry.index]
        print(f"  {place}. {entry.prediction.latency_us:9.2f} us  tile {c.tile_m}x{c.tile_n}x{c.tile_k} split_k {c.split_k} "
              f"stages {c.stages} cluster {c.cluster_m}x{c.cluster_n} swap_ab {int(c.swap_ab)} {c.schedule}")
    default = pw.Gemm(m=args.m, n=args.n, k=args.k, dtype=args.dtype, config=pw.default_gemm_config(shape, gpu))
    default_us = predictor.predict(default, gpu).latency_us
    best_us = ranked[0].prediction.latency_us
    print(f"  default config: {default_us:.2f} us; predicted best {default_us / best_us:.2f}x faster")
    if args.csv:
        with open(args.csv, "w", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(["rank", "kernel", "latency_us", "bottleneck"])
            for place, entry in enumerate(ranked, start=1):
                writer.writerow([place, str(candidates[entry.index]), entry.prediction.latency_us, entry.prediction.bottleneck])


if __name__ == "__main__":
    main()
