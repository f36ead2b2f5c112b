"""Tunes one model's MoE layer without running it: for each batch size, the fused-MoE config the
bundled model predicts fastest among those vLLM's tuning script searches, beside vLLM's default
(what an engine runs with no tuned table), written as the JSON table vLLM and SGLang read
(E=<experts>,N=<intermediate>,device_name=<GPU>.json: batch size -> config).

    python examples/python/tune_fused_moe.py [--experts 8] [--top-k 2] [--hidden 4096] [--intermediate 14336]
        [--tp 2] [--dtype bf16] [--gpu H100-SXM] [--batches 1,16,64,256,1024,4096] [--out table.json]

Defaults: Mixtral-8x7B's experts at tensor parallelism 2.
"""

import argparse
import json

import pipeweave as pw


def main():
    parser = argparse.ArgumentParser(description="a fused-MoE config table from predictions")
    parser.add_argument("--experts", type=int, default=8)
    parser.add_argument("--top-k", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--intermediate", type=int, default=14336, help="per expert, before the TP split")
    parser.add_argument("--tp", type=int, default=2)
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--gpu", default="H100-SXM")
    parser.add_argument("--batches", default="1,16,64,256,1024,4096")
    parser.add_argument("--out", help="write the table as vLLM's tuned-config JSON")
    args = parser.parse_args()
    if args.intermediate % args.tp:
        parser.error(f"--intermediate {args.intermediate} does not split over --tp {args.tp}")

    predictor, gpu = pw.Predictor(), pw.GpuSpec(args.gpu)
    inter = args.intermediate // args.tp
    table = {}
    print(f"experts {args.experts} top-{args.top_k}, hidden {args.hidden}, intermediate {inter} per GPU, {args.dtype}, {gpu.name}")
    print(f"  {'tokens':>7} {'default_us':>11} {'tuned_us':>9} {'speedup':>8}  tuned config")
    for tokens in (int(t) for t in args.batches.split(",")):
        shape = pw.FusedMoe(tokens=tokens, experts=args.experts, top_k=args.top_k, hidden=args.hidden, intermediate=inter,
                            dtype=args.dtype)
        configs = pw.fused_moe_candidates(shape, gpu)
        kernels = [pw.FusedMoe(tokens=tokens, experts=args.experts, top_k=args.top_k, hidden=args.hidden,
                               intermediate=inter, dtype=args.dtype, config=c) for c in configs]
        ranked = predictor.rank(kernels, gpu)
        best = configs[ranked[0].index]
        default_us = predictor.predict(shape, gpu).latency_us  # no config: vLLM's default
        tuned_us = ranked[0].prediction.latency_us
        print(f"  {tokens:>7} {default_us:>11.1f} {tuned_us:>9.1f} {default_us / tuned_us:>8.2f}  {best}")
        table[str(tokens)] = {"BLOCK_SIZE_M": best.block_m, "BLOCK_SIZE_N": best.block_n, "BLOCK_SIZE_K": best.block_k,
                              "GROUP_SIZE_M": best.group_m, "num_warps": best.warps, "num_stages": best.stages}
    if args.out:
        with open(args.out, "w") as out:
            json.dump(table, out, indent=4)
        print(f"  wrote {args.out} (vLLM's name for it: E={args.experts},N={inter},device_name=<CUDA device name>.json)")


if __name__ == "__main__":
    main()
