#!/usr/bin/env python3
"""GEMM shapes as serving engines run them, drawn from the linear layers of public model families.

    python3 cuda_kernels/served_gemm_shapes.py --out data/shapes/gemm_served.csv [--per-layer 24] [--random 6000] [--seed 1]

Each family's layers (attention's QKV and output projections, the MLP's gate-up and down, the LM
head; for a mixture of experts each expert's gate-up and down, the shared expert's and, for
DeepSeek's MLA, its latent projections) are split over tensor parallelism 1, 2, 4 and 8 where the
heads divide, as vLLM and SGLang shard them (QKV and gate-up by columns, output and down by
rows), and each (n, k) is drawn at --per-layer token counts m: half decode batches (1-256), a
third prompt chunks (257-8192), the rest long prompts (8193-65536), log-uniform within each. An
expert's m is its share of the batch's routed tokens (tokens x top-k / experts, at least 1).
--random shapes more take n and k as multiples of 8 up to 16384 (a quarter of them multiples of
8 that are not multiples of 64) and m as above: shapes no family has.
Every shape is listed for bf16 and fp8_e4m3; a shape two layers share is listed once, for the
first family that has it (families in the order below). Columns: dtype,m,n,k (what
pipeweave-collect reads) then family, tp, layer (what the per-family report groups by;
pipeweave-collect ignores them). The dimensions are each model's config.json on the Hugging Face
hub (hidden_size, intermediate_size or moe_intermediate_size, heads, KV heads, head_dim,
vocab_size, experts, experts per token).
"""
import argparse
import math
import random

# name, hidden, intermediate (dense MLP; 0: none), heads, kv_heads, head_dim, vocab, gated MLP,
# then for MoE: experts, top-k, expert intermediate, shared-expert intermediate (0: none)
FAMILIES = [
    # dense
    ("Llama-3.2-1B", 2048, 8192, 32, 8, 64, 128256, True),
    ("Llama-3.2-3B", 3072, 8192, 24, 8, 128, 128256, True),
    ("Llama-3.1-405B", 16384, 53248, 128, 8, 128, 128256, True),
    ("Llama-2-7B", 4096, 11008, 32, 32, 128, 32000, True),
    ("Llama-2-13B", 5120, 13824, 40, 40, 128, 32000, True),
    ("Qwen2.5-0.5B", 896, 4864, 14, 2, 64, 151936, True),
    ("Qwen2.5-1.5B", 1536, 8960, 12, 2, 128, 151936, True),
    ("Qwen2.5-3B", 2048, 11008, 16, 2, 128, 151936, True),
    ("Qwen2.5-72B", 8192, 29568, 64, 8, 128, 152064, True),
    ("Qwen3-0.6B", 1024, 3072, 16, 8, 128, 151936, True),
    ("Qwen3-1.7B", 2048, 6144, 16, 8, 128, 151936, True),
    ("Qwen3-4B", 2560, 9728, 32, 8, 128, 151936, True),
    ("Qwen3-14B", 5120, 17408, 40, 8, 128, 151936, True),
    ("Gemma-2-2B", 2304, 9216, 8, 4, 256, 256000, True),
    ("Gemma-2-9B", 3584, 14336, 16, 8, 256, 256000, True),
    ("Gemma-2-27B", 4608, 36864, 32, 16, 128, 256000, True),
    ("Gemma-3-12B", 3840, 15360, 16, 8, 256, 262208, True),
    ("Gemma-3-27B", 5376, 21504, 32, 16, 128, 262208, True),
    ("Mistral-Small-24B", 5120, 32768, 32, 8, 128, 131072, True),
    ("Mistral-Nemo-12B", 5120, 14336, 32, 8, 128, 131072, True),
    ("Mistral-Large-2", 12288, 28672, 96, 8, 128, 32768, True),
    ("Phi-3-mini", 3072, 8192, 32, 32, 96, 32064, True),
    ("Phi-3-medium", 5120, 17920, 40, 10, 128, 32064, True),
    ("Phi-4", 5120, 17920, 40, 10, 128, 100352, True),
    ("Yi-1.5-34B", 7168, 20480, 56, 8, 128, 64000, True),
    ("InternLM2.5-7B", 4096, 14336, 32, 8, 128, 92544, True),
    ("SmolLM2-1.7B", 2048, 8192, 32, 32, 64, 49152, True),
    ("TinyLlama-1.1B", 2048, 5632, 32, 4, 64, 32000, True),
    ("Command-R-35B", 8192, 22528, 64, 64, 128, 256000, True),
    ("OLMo-2-7B", 4096, 11008, 32, 32, 128, 100352, True),
    ("Granite-3.1-8B", 4096, 12800, 32, 8, 128, 49155, True),
    ("GLM-4-9B", 4096, 13696, 32, 2, 128, 151552, True),
    ("StarCoder2-15B", 6144, 24576, 48, 4, 128, 49152, False),
    # mixtures of experts
    ("Mixtral-8x22B", 6144, 0, 48, 8, 128, 32768, True, 8, 2, 16384, 0),
    ("Qwen1.5-MoE-A2.7B", 2048, 0, 16, 16, 128, 151936, True, 60, 4, 1408, 5632),
    ("Qwen2-57B-A14B", 3584, 0, 28, 4, 128, 151936, True, 64, 8, 2560, 20480),
    ("Qwen3-30B-A3B", 2048, 0, 32, 4, 128, 151936, True, 128, 8, 768, 0),
    ("Qwen3-235B-A22B", 4096, 0, 64, 4, 128, 151936, True, 128, 8, 1536, 0),
    ("OLMoE-1B-7B", 2048, 0, 16, 16, 128, 50304, True, 64, 8, 1024, 0),
    ("Phi-3.5-MoE", 4096, 0, 32, 8, 128, 32064, True, 16, 2, 6400, 0),
    ("DeepSeek-V2-Lite", 2048, 10944, 16, 16, 128, 102400, True, 64, 6, 1408, 2816),
    ("DeepSeek-V3", 7168, 18432, 128, 128, 128, 129280, True, 256, 8, 2048, 2048),
]
# DeepSeek's multi-head latent attention (hidden -> latents -> heads) in place of QKV: q_lora_rank
# (0: Q projected from hidden directly), kv_lora_rank, rope dim, nope dim, v dim.
MLA = {"DeepSeek-V2-Lite": (0, 512, 64, 128, 128), "DeepSeek-V3": (1536, 512, 64, 128, 128)}


def tokens(rng):
    """A token count: decode batch, prompt chunk or long prompt, log-uniform within each."""
    draw = rng.random()
    low, high = (1, 256) if draw < 0.5 else (257, 8192) if draw < 0.5 + 1 / 3 else (8193, 65536)
    return int(round(math.exp(rng.uniform(math.log(low), math.log(high + 1)))))


def layers(family, tp):
    """(layer, n, k, expert share) of one GPU's slice at tensor parallelism tp; None where tp does not divide."""
    name, hidden, inter, heads, kv_heads, head_dim, vocab, gated = family[:8]
    moe = family[8:] if len(family) > 8 else None
    if heads % tp:
        return None
    out = []
    kv_local = max(1, kv_heads // tp)  # KV heads replicate when tp exceeds them
    if name in MLA:
        q_rank, kv_rank, rope, nope, v = MLA[name]
        h = heads // tp
        if q_rank:
            out += [("q_a", q_rank, hidden, 1), ("q_b", h * (nope + rope), q_rank, 1)]
        else:
            out.append(("q", h * (nope + rope), hidden, 1))
        out += [("kv_a", kv_rank + rope, hidden, 1), ("kv_b", h * (nope + v), kv_rank, 1), ("o", hidden, h * v, 1)]
    else:
        out += [("qkv", (heads // tp + 2 * kv_local) * head_dim, hidden, 1), ("o", hidden, heads // tp * head_dim, 1)]
    width = 2 if gated else 1
    if inter:
        if inter % tp:
            return None
        out += [("gate_up", width * inter // tp, hidden, 1), ("down", hidden, inter // tp, 1)]
    if moe:
        experts, top_k, expert_inter, shared = moe
        if expert_inter % tp:
            return None
        share = top_k / experts
        out += [("expert_gate_up", width * expert_inter // tp, hidden, share), ("expert_down", hidden, expert_inter // tp, share)]
        if shared and shared % tp == 0:
            out += [("shared_gate_up", width * shared // tp, hidden, 1), ("shared_down", hidden, shared // tp, 1)]
    out.append(("lm_head", -(-vocab // tp), hidden, 1))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--per-layer", type=int, default=24, help="token counts drawn per layer and tensor-parallel size")
    parser.add_argument("--random", type=int, default=6000, help="shapes of no family (n, k multiples of 8)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    seen, rows = set(), []

    def add(m, n, k, family, tp, layer):
        if (m, n, k) in seen:
            return
        seen.add((m, n, k))
        rows.append((m, n, k, family, tp, layer))

    for family in FAMILIES:
        for tp in (1, 2, 4, 8):
            for layer, n, k, share in layers(family, tp) or []:
                for _ in range(args.per_layer):
                    add(max(1, round(tokens(rng) * share)), n, k, family[0], tp, layer)
    for _ in range(args.random):
        def dim():
            if rng.random() < 0.25:  # a multiple of 8 that is not one of 64
                return 8 * rng.choice([v for v in range(1, 2049) if v % 8])
            return 64 * rng.randint(1, 256)
        add(tokens(rng), dim(), dim(), "random", 0, "random")
    rng.shuffle(rows)  # no family's shapes together: a collection's clock drift spreads over all
    with open(args.out, "w") as out:
        out.write("dtype,m,n,k,family,tp,layer\n")
        for dtype in ("bf16", "fp8_e4m3"):
            for m, n, k, family, tp, layer in rows:
                out.write(f"{dtype},{m},{n},{k},{family},{tp},{layer}\n")
    families = len({r[3] for r in rows} - {"random"})
    print(f"{len(rows)} shapes ({families} families and {sum(r[3] == 'random' for r in rows)} random), "
          f"{2 * len(rows)} rows with both dtypes -> {args.out}")


if __name__ == "__main__":
    main()
