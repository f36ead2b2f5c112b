#!/usr/bin/env python3
"""What skewed routing does to the fused-MoE rows, and how well the op's expected expert load
matches what the collector measured:

    python3 data/models/fused_moe_routing.py [--gpu H100-SXM]

1. Per family and routing: the expected experts touched and padded rows (BLOCK_SIZE_M blocks of
   each touched expert's expected rows), computed as include/pipeweave/ops/fused_moe.hpp's
   detail::expert_load computes them (mirrored here), against each row's experts_touched and
   padded_rows: mean signed error and MAPE.
2. Per token count: the median over matched rows (same family, TP, dtype and config) of the
   skewed time over the uniform time.
"""
import argparse
import collections
import csv
import gzip
import math
import statistics

FAMILIES = ["Mixtral-8x7B", "Qwen1.5-MoE-A2.7B", "Qwen3-30B-A3B", "DeepSeek-V2-Lite", "OLMoE-1B-7B"]


def expert_load(experts, top_k, tokens, zipf, block_m):
    """(expected experts touched, expected row blocks), as detail::expert_load."""
    if zipf == 0:
        active = experts * -math.expm1(tokens * math.log1p(-top_k / experts))
        return active, active * math.ceil(tokens * top_k / active / block_m)
    chance = [(i + 1) ** -zipf for i in range(experts)]
    tail = [0.0] * (experts + 1)
    for i in range(experts - 1, -1, -1):
        tail[i] = tail[i + 1] + chance[i]
    left, saturated = float(top_k), 0
    while saturated < experts and left > 0 and chance[saturated] * left >= tail[saturated]:
        chance[saturated] = 1.0
        saturated += 1
        left -= 1
    for i in range(saturated, experts):
        chance[i] *= left / tail[saturated]
    active = blocks = 0.0
    for p in chance:
        touched = 1.0 if p >= 1 else -math.expm1(tokens * math.log1p(-p))
        if touched <= 0:
            continue
        active += touched
        blocks += touched * math.ceil(tokens * p / touched / block_m)
    return active, blocks


def rows(gpu, family, routing):
    with gzip.open(f"data/measurements/{gpu}/fused_moe/{family}.{routing}.csv.gz", "rt", newline="") as f:
        return list(csv.DictReader(f))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", default="H100-SXM")
    args = parser.parse_args()
    print(f"{'family':18} {'routing':8} {'rows':>6} {'touched bias%':>13} {'MAPE%':>6} {'padded bias%':>12} {'MAPE%':>6}")
    ratios = collections.defaultdict(list)
    for family in FAMILIES:
        timed = {}
        for routing in ("uniform", "skewed"):
            touched, padded = [], []
            for r in rows(args.gpu, family, routing):
                block_m = int(r["block_m"])
                active, blocks = expert_load(int(r["experts"]), int(r["top_k"]), int(r["tokens"]),
                                             float(r.get("zipf") or 0), block_m)
                touched.append(active / int(r["experts_touched"]) - 1)
                padded.append(blocks * block_m / int(r["padded_rows"]) - 1)
                key = tuple(r[c] for c in ("dtype", "tokens", "tp", "block_m", "block_n", "block_k", "stages", "group_m", "warps"))
                timed.setdefault(routing, {})[key] = float(r["duration_us"])
            print(f"{family:18} {routing:8} {len(touched):6} {100 * statistics.fmean(touched):+13.1f} "
                  f"{100 * statistics.fmean(abs(e) for e in touched):6.1f} {100 * statistics.fmean(padded):+12.1f} "
                  f"{100 * statistics.fmean(abs(e) for e in padded):6.1f}")
        for key, skewed_us in timed["skewed"].items():
            if key in timed["uniform"]:
                ratios[int(key[1])].append(skewed_us / timed["uniform"][key])
    print(f"\n{'tokens':>6} {'rows':>6} {'median skewed / uniform time':>29}")
    for tokens in sorted(ratios):
        print(f"{tokens:6} {len(ratios[tokens]):6} {statistics.median(ratios[tokens]):29.3f}")


if __name__ == "__main__":
    main()
