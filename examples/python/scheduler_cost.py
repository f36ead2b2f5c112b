"""A serving scheduler's cost hook: the largest batch that fits a latency budget.

Llama-3-8B on one GPU; each candidate iteration is one prefill chunk beside N decode requests.
The hook asks pipeweave for the iteration's kernel time (one layer's kernels as one list, times
the layers, plus the LM head) and admits the most decodes that stay within the budget, then
reports what one estimate costs on this CPU.

    python examples/python/scheduler_cost.py [--gpu H100-SXM] [--budget-ms 30] [--json out.json]
"""

import argparse
import json
import time

import pipeweave as pw

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, INTERMEDIATE, VOCAB, LAYERS = 4096, 32, 8, 128, 14336, 128256, 32


def iteration_us(predictor, gpu, chunk, prefix, decodes, context):
    """Predicted kernel time of one iteration: a chunk of `chunk` prompt tokens after `prefix`
    cached ones, and `decodes` requests of one token over `context` tokens each."""
    tokens = chunk + decodes
    q_lens = ([chunk] if chunk else []) + [1] * decodes
    kv_lens = ([prefix + chunk] if chunk else []) + [context] * decodes
    layer = [
        pw.RmsNorm(tokens=tokens, hidden=HIDDEN, fused_residual=True),
        pw.Gemm(m=tokens, n=(HEADS + 2 * KV_HEADS) * HEAD_DIM, k=HIDDEN),
        pw.Attention(q_lens, kv_lens, heads=HEADS, kv_heads=KV_HEADS, head_dim=HEAD_DIM),
        pw.Gemm(m=tokens, n=HIDDEN, k=HEADS * HEAD_DIM),
        pw.RmsNorm(tokens=tokens, hidden=HIDDEN, fused_residual=True),
        pw.Gemm(m=tokens, n=2 * INTERMEDIATE, k=HIDDEN),
        pw.SiluMul(tokens=tokens, dim=INTERMEDIATE),
        pw.Gemm(m=tokens, n=HIDDEN, k=INTERMEDIATE),
    ]
    lm_head = pw.Gemm(m=(1 if chunk else 0) + decodes, n=VOCAB, k=HIDDEN)
    layer_us = sum(p.latency_us for p in predictor.predict(layer, gpu))
    return LAYERS * layer_us + predictor.predict(lm_head, gpu).latency_us


def main():
    parser = argparse.ArgumentParser(description="the most decodes beside a prefill chunk within a latency budget")
    parser.add_argument("--gpu", default="H100-SXM", help="catalog name or spec JSON file")
    parser.add_argument("--budget-ms", type=float, default=30.0, help="kernel time allowed per iteration")
    parser.add_argument("--json", help="write the candidates and the choice as JSON to this file")
    args = parser.parse_args()
    if not args.budget_ms > 0:
        parser.error(f"--budget-ms must be a positive number of milliseconds, got {args.budget_ms}")

    predictor = pw.Predictor()  # made once and shared: it is thread-safe
    gpu = pw.GpuSpec(args.gpu)
    chunk, prefix, context = 512, 1024, 2048
    print(f"Llama-3-8B on {gpu.name}, budget {args.budget_ms:.1f} ms per iteration (kernel time)")
    print(f"  prefill chunk {chunk} tokens (after {prefix} cached) + N decodes over {context} tokens of context")
    print(f"  {'decodes':>8} {'predicted_ms':>14}")
    candidates, admitted = [], 0
    decodes = 16
    while decodes <= 1024:
        us = iteration_us(predictor, gpu, chunk, prefix, decodes, context)
        fits = us <= args.budget_ms * 1000
        candidates.append({"decodes": decodes, "predicted_ms": us / 1000, "fits": fits})
        print(f"  {decodes:>8} {us / 1000:>14.3f}{'' if fits else '  over budget'}")
        if not fits:
            break
        admitted = decodes
        decodes *= 2
    print(f"  -> admit {admitted} decodes beside the chunk")

    calls = 200
    start = time.perf_counter()
    for i in range(calls):
        iteration_us(predictor, gpu, chunk, prefix, 64 + i % 4, context)
    per_estimate_us = (time.perf_counter() - start) / calls * 1e6
    print(f"  one iteration estimate (9 kernels) costs {per_estimate_us:.1f} us on this CPU")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"gpu": gpu.name, "budget_ms": args.budget_ms, "candidates": candidates, "admitted_decodes": admitted,
                       "estimate_cost_us": per_estimate_us}, out, indent=2)


if __name__ == "__main__":
    main()
