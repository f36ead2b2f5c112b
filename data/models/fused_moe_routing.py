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

FAMILIES = ["Mixtral-8x7B", "Qwen1.5-MoE-A2.7B", "Qwen3-30B-A3B", "DeepSeek-V2-Lite", "OLMoE-1B-7B", "Mixtral-8x22B",
            "Qwen2-57B-A14B", "Phi-3.5-MoE", "DeepSeek-V2", "Qwen3-235B-A22B", "Granite-3.0-3B-A800M", "DBRX",
            "Llama-4-Scout-17B-16E"]


_CHANCES = {}


def successive_sampling_chances(experts, top_k, zipf):
    """Each expert's chance of being among a token's top_k drawn without replacement in proportion to
    (i + 1)^-zipf, as detail::successive_sampling_chances computes it (the same integral, points and
    special cases)."""
    key = (experts, top_k, zipf)
    if key in _CHANCES:
        return _CHANCES[key]
    weight = [(i + 1) ** -zipf for i in range(experts)]
    k = top_k
    if k >= experts:
        chance = [1.0] * experts
    elif k == 1:
        total = 0.0
        for w in reversed(weight):
            total += w
        chance = [w * (1 / total) for w in weight]
    elif experts * k > 131072:
        def drawn(xi):
            return sum(-math.expm1(-w * xi) for w in weight)
        total = 0.0
        for w in reversed(weight):
            total += w
        low, high = math.log(0.5 * k / total), math.log(1e3 / weight[-1])
        for _ in range(100):
            middle = 0.5 * (low + high)
            if drawn(math.exp(middle)) < k:
                low = middle
            else:
                high = middle
        xi = math.exp(0.5 * (low + high))
        chance = [-math.expm1(-w * xi) for w in weight]
    else:
        step = min(0.25, 0.7 / math.sqrt(k))
        first, last = math.log(1e-12 / weight[0]), math.log(40 / weight[-1])
        chance = [0.0] * experts
        for point in range(int(math.ceil((last - first) / step)) + 1):
            t = math.exp(first + point * step)
            below = [-math.expm1(-w * t) for w in weight]
            after = [[1.0] * k for _ in range(experts + 1)]
            for i in range(experts - 1, -1, -1):
                nxt, here = after[i + 1], after[i]
                here[0] = (1 - below[i]) * nxt[0]
                for m in range(1, k):
                    here[m] = (1 - below[i]) * nxt[m] + below[i] * nxt[m - 1]
            before = [1.0] + [0.0] * (k - 1)
            for i in range(experts):
                rest = after[i + 1]
                others_fewer = sum(before[m] * rest[k - 1 - m] for m in range(k))
                wt = weight[i] * t
                chance[i] += step * wt * math.exp(-wt) * others_fewer
                for m in range(k - 1, 0, -1):
                    before[m] = before[m] * (1 - below[i]) + before[m - 1] * below[i]
                before[0] *= 1 - below[i]
    _CHANCES[key] = chance
    return chance


def expert_load(experts, top_k, tokens, zipf, block_m):
    """(expected experts touched, expected row blocks), as detail::expert_load."""
    if zipf == 0:
        active = experts * -math.expm1(tokens * math.log1p(-top_k / experts))
        return active, active * math.ceil(tokens * top_k / active / block_m)
    active = blocks = 0.0
    for p in successive_sampling_chances(experts, top_k, zipf):
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
