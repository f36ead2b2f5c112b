#!/usr/bin/env python3
"""Measures the fused-MoE layer's two grouped GEMMs (fused_moe_triton.py) across configs, on the
shapes of public MoE models, with uniform and skewed routing.

    python3 cuda_kernels/fused_moe/collect_fused_moe.py --out moe.csv [--budget-s 420] [--seed 1]
        [--workers 12] [--configs 60] [--per-shape 12] [--ep 2,4,8 [--ep-only]] [--models A,B,...]

Shapes: the experts' layers of Mixtral-8x7B, Qwen1.5-MoE-A2.7B, Qwen3-30B-A3B, DeepSeek-V2-Lite
and OLMoE-1B-7B (by default; --models names others of MODELS below) at tensor parallelism 1-8
(each expert's intermediate split over the TP ranks; shared experts are dense layers, not
measured here), tokens 1 to 16,384, bf16 and fp8 e4m3.
Routing: each token picks top_k distinct experts, uniformly ("uniform") or in proportion to a
Zipf popularity of exponent 1.2 over the experts in a random order ("skewed"): a Gumbel top-k
draw. Configs: --configs drawn from vLLM's tuning grid (BLOCK_SIZE_M 16-128, BLOCK_SIZE_N 32-256,
BLOCK_SIZE_K 64-256, GROUP_SIZE_M 1/16/32, num_warps 4/8, num_stages 2-5) that fit in shared
memory, plus vLLM's two default configs (fused_moe_triton.vllm_default_config). Every config is
measured on the "full" shapes (uniform routing, tokens 1, 8, 64, 512, 4096), --per-shape drawn
ones plus the defaults elsewhere.

Protocol: as a serving engine runs the layer, back to back with no flush, the weights cold in L2
(each launch on another copy of the experts' weights, the copies spanning at least twice the L2
for the experts one token touches); time per kernel from CUPTI through the PyTorch profiler, the
median of --reps after --warmup launches. Shapes are measured in a random order (full ones first)
until --budget-s; what is measured in time is a random subset. Compiles first, in --workers
processes (Triton's cache is shared on disk).

Expert parallelism (--ep SIZES): the experts split over SIZE ranks (tensor parallelism 1, each
expert whole; sizes that do not divide a model's experts are skipped), each token routed over all
the experts, and rank 0 (global experts 0 to E/SIZE - 1) measured as vLLM runs it without an
all-to-all: every routed row sorted and padded, another rank's blocks writing zeros
(fused_moe_triton.py). Its rows count the local experts touched and their largest expert's rows;
vLLM's default config is the one for the local experts (the kernel's weight tensor). --ep-only
measures the expert-parallel points alone.

Writes one row per (shape, routing, dtype, config): the shape, the routing's measured expert
load (experts touched, the largest expert's rows, rows after padding), the config, and the two
kernels' times gemm1_us (gate-up) and gemm2_us (down); ep the expert-parallel size (1: none).
"""
import argparse
import csv
import itertools
import math
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
import types

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fused_moe_triton as fm  # noqa: E402

# name: (experts, top_k, hidden, moe intermediate per expert, TP sizes); from each model's config.json
MODELS = {
    "Mixtral-8x7B": (8, 2, 4096, 14336, (1, 2, 4, 8)),
    "Qwen1.5-MoE-A2.7B": (60, 4, 2048, 1408, (1, 2, 4)),
    "Qwen3-30B-A3B": (128, 8, 2048, 768, (1, 2, 4)),
    "DeepSeek-V2-Lite": (64, 6, 2048, 1408, (1, 2, 4)),
    "OLMoE-1B-7B": (64, 8, 2048, 1024, (1, 2)),
    # Added 2026-11-27 as training families (--models, the run of seed 5); none has the shape of a
    # held-out family (DeepSeek-V2-Lite, OLMoE-1B-7B).
    "Mixtral-8x22B": (8, 2, 6144, 16384, (2, 4, 8)),
    "Qwen2-57B-A14B": (64, 8, 3584, 2560, (1, 2, 4)),
    "Phi-3.5-MoE": (16, 2, 4096, 6400, (1, 2, 4)),
    "DeepSeek-V2": (160, 6, 5120, 1536, (1, 2, 4, 8)),
    "Qwen3-235B-A22B": (128, 8, 4096, 1536, (2, 4, 8)),
    "Granite-3.0-3B-A800M": (40, 8, 1536, 512, (1, 2)),
    "DBRX": (16, 4, 6144, 10752, (2, 4, 8)),
    "Llama-4-Scout-17B-16E": (16, 1, 5120, 8192, (1, 2, 4, 8)),
}
# What a run without --models measures: the five families of the runs of seeds 1-4.
FIRST_MODELS = ("Mixtral-8x7B", "Qwen1.5-MoE-A2.7B", "Qwen3-30B-A3B", "DeepSeek-V2-Lite", "OLMoE-1B-7B")
TOKENS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
FULL_TOKENS = (1, 8, 64, 512, 4096)
DTYPES = ("bf16", "fp8")
GRID = {"BLOCK_SIZE_M": (16, 32, 64, 128), "BLOCK_SIZE_N": (32, 64, 128, 256), "BLOCK_SIZE_K": (64, 128, 256),
        "GROUP_SIZE_M": (1, 16, 32), "num_warps": (4, 8), "num_stages": (2, 3, 4, 5)}
SMEM_BYTES = 220 * 1024  # what one CTA may use on Hopper, less a margin
L2_BYTES = 50 * 1024 * 1024
CONFIG_KEYS = tuple(GRID)


def key(config):
    return tuple(config[k] for k in CONFIG_KEYS)


def pick_configs(count, seed):
    grid = [dict(zip(CONFIG_KEYS, values)) for values in itertools.product(*GRID.values())]
    fits = [c for c in grid if c["num_stages"] * (c["BLOCK_SIZE_M"] + c["BLOCK_SIZE_N"]) * c["BLOCK_SIZE_K"] * 2 <= SMEM_BYTES]
    picked = random.Random(seed).sample(fits, count)
    for tokens, experts in ((1, 8), (1000, 8)):
        default = fm.vllm_default_config(tokens, experts)
        if key(default) not in {key(c) for c in picked}:
            picked.append(default)
    return picked


def torch_dtype(dtype):
    return torch.float8_e4m3fn if dtype == "fp8" else torch.bfloat16


def compile_share(args):
    """A worker: compiles its share of (config, dtype, gemm) on a tiny problem; returns the failures."""
    share, = args
    torch.cuda.set_device(0)
    failed = []
    experts, hidden, inter, tokens, top_k = 4, 256, 128, 16, 2
    ids = torch.stack([torch.randperm(experts, device="cuda")[:top_k] for _ in range(tokens)])
    weights = torch.rand(tokens, top_k, device="cuda")
    for config, dtype in share:
        dt = torch_dtype(dtype)
        a = torch.randn(tokens, hidden, device="cuda").to(dt)
        a2 = torch.randn(tokens * top_k, inter, device="cuda").to(dt)
        w1 = torch.randn(experts, 2 * inter, hidden, device="cuda").to(dt)
        w2 = torch.randn(experts, hidden, inter, device="cuda").to(dt)
        c1 = torch.empty(tokens * top_k, 2 * inter, device="cuda", dtype=torch.bfloat16)
        c2 = torch.empty(tokens * top_k, hidden, device="cuda", dtype=torch.bfloat16)
        scale = torch.ones(experts, device="cuda")
        sorted_ids, expert_ids, total = fm.moe_align_block_size(ids, config["BLOCK_SIZE_M"], experts)
        try:
            fm.invoke(a, w1, c1, scale, scale, weights, sorted_ids, expert_ids, total, top_k, False, config)
            fm.invoke(a2, w2, c2, scale, scale, weights, sorted_ids, expert_ids, total, 1, True, config)
            torch.cuda.synchronize()
        except Exception as error:  # noqa: BLE001 - an out-of-resources config is skipped, and said so
            failed.append((key(config), dtype, type(error).__name__))
    return failed


def route(tokens, experts, top_k, skewed, generator):
    """Each token's top_k distinct experts (Gumbel top-k over log-popularity) and renormalised weights."""
    if skewed:
        order = torch.randperm(experts, generator=generator)
        popularity = 1.0 / (torch.arange(experts, dtype=torch.float32) + 1) ** 1.2
        log_p = torch.log(popularity[order.argsort()])
    else:
        log_p = torch.zeros(experts)
    gumbel = -torch.log(-torch.log(torch.rand(tokens, experts, generator=generator).clamp_min(1e-20)))
    scores = log_p + gumbel
    weights, ids = torch.topk(torch.softmax(scores, dim=-1), top_k, dim=-1)
    weights = weights / weights.sum(dim=-1, keepdim=True)
    return ids.to(torch.int32).cuda(), weights.cuda()


def kernel_durations(profiler):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        profiler.export_chrome_trace(path)
        import json
        with open(path) as f:
            trace = json.load(f)
    events = [e for e in trace.get("traceEvents", []) if e.get("cat") == "kernel" and e.get("ph") == "X"]
    events.sort(key=lambda e: e["ts"])
    return [e["dur"] for e in events if "fused_moe_kernel" in e["name"]]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--budget-s", type=float, default=420)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=12)
    parser.add_argument("--configs", type=int, default=60)
    parser.add_argument("--per-shape", type=int, default=12)
    parser.add_argument("--reps", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--models", default=",".join(FIRST_MODELS), help=f"comma list of {', '.join(MODELS)}")
    parser.add_argument("--tokens", default=",".join(map(str, TOKENS)))
    parser.add_argument("--ep", default="", help="expert-parallel sizes to measure beside the TP points (comma list)")
    parser.add_argument("--ep-only", action="store_true", help="only the expert-parallel points")
    args = parser.parse_args()
    unknown = [name for name in args.models.split(",") if name not in MODELS]
    if unknown:
        parser.error(f"--models: unknown family {unknown[0]!r}")
    return args


def reference_layer(x, w1, w2, ids, wts, held):
    """The layer in plain PyTorch, summed over the routed slots whose expert is among the first `held`
    (all of them; or, under expert parallelism, rank 0's)."""
    out = torch.zeros(x.shape[0], w2.shape[1], device="cuda")
    for token in range(x.shape[0]):
        for slot in range(ids.shape[1]):
            expert = int(ids[token, slot])
            if expert < held:
                g, u = (x[token] @ w1[expert].T).chunk(2)
                out[token] += wts[token, slot] * (w2[expert] @ (torch.nn.functional.silu(g) * u))
    return out


def check_against_pytorch(seed):
    """A check of the kernel against PyTorch, bf16 and fp8, whole and as rank 0 of expert parallelism
    over 4 ranks (experts 0-1 of 8, adding only their part), before anything is timed; exits on a
    disagreement."""
    torch.manual_seed(seed)
    for dtype in DTYPES:
        e, t, h, i, k = 8, 33, 512, 256, 2
        x = torch.randn(t, h, device="cuda") / 4
        w1 = torch.randn(e, 2 * i, h, device="cuda") / 16
        w2 = torch.randn(e, h, i, device="cuda") / 16
        ids, wts = route(t, e, k, False, torch.Generator().manual_seed(1))
        one = torch.ones(e, device="cuda")
        cast = (lambda v: v.to(torch.float8_e4m3fn)) if dtype == "fp8" else (lambda v: v.to(torch.bfloat16))
        for held, label, kernel in ((e, "", "kernel"), (e // 4, ", expert parallel", "expert-parallel kernel")):
            ref = reference_layer(x, w1, w2, ids, wts, held)
            got = fm.fused_moe(cast(x), cast(w1[:held]), cast(w2[:held]), wts, ids, fm.vllm_default_config(t, held),
                               one, one, one, global_experts=None if held == e else e)
            error = ((got.float() - ref).norm() / ref.norm()).item()
            print(f"check {dtype}{label}: relative error {error:.4f} against PyTorch", file=sys.stderr, flush=True)
            if error > (0.1 if dtype == "fp8" else 0.02):
                sys.exit(f"collect_fused_moe: error: the {dtype} {kernel} disagrees with PyTorch ({error:.3f})")


def compile_all(configs, workers, start):
    """Compiles every (config, dtype) once, in parallel; Triton's disk cache serves the timing runs.
    Returns the (config key, dtype) pairs that failed to compile or run."""
    jobs = [(c, d) for c in configs for d in DTYPES]
    shares = [jobs[w::workers] for w in range(workers)]
    context = multiprocessing.get_context("spawn")
    with context.Pool(workers) as pool:
        failed = [f for part in pool.map(compile_share, [(s,) for s in shares]) for f in part]
    bad = {(k, d) for k, d, _ in failed}
    print(f"compiled {len(jobs) - len(bad)} of {len(jobs)} (config, dtype) in {time.time() - start:.0f} s; "
          f"failed: {sorted(set(n for _, _, n in failed))}", file=sys.stderr, flush=True)
    return bad


def measurement_order(args, rng):
    """The points (model, tp, ep, tokens, routing, dtype) in the order they are measured, the "full"
    ones first, each part shuffled; and the full ones."""
    names = args.models.split(",")
    layers = [] if args.ep_only else [(name, tp, 1) for name in names for tp in MODELS[name][4]]
    for ep in (int(size) for size in args.ep.split(",") if size):
        layers += [(name, 1, ep) for name in names if ep > 1 and MODELS[name][0] % ep == 0]
    token_list = [int(t) for t in args.tokens.split(",")]
    points = [(name, tp, ep, tokens, routing, dtype) for name, tp, ep in layers for tokens in token_list
              for routing in ("uniform", "skewed") for dtype in DTYPES]
    full = [p for p in points if p[4] == "uniform" and p[3] in FULL_TOKENS]
    rest = [p for p in points if p not in full]
    rng.shuffle(full)
    rng.shuffle(rest)
    return full + rest, full


def make_layer(name, tp, ep, tokens, routing, dtype, generator):
    """One point's operands: copies of the (local) experts' weights (enough to span twice the L2 for
    the experts a token touches, within 6 GiB), the activations, the outputs and the routing over
    all the experts."""
    experts, top_k, hidden, inter_full, _ = MODELS[name]
    inter = inter_full // tp
    local = experts // ep
    dt = torch_dtype(dtype)
    bytes_per = 1 if dtype == "fp8" else 2
    expert_bytes = 3 * inter * hidden * bytes_per
    total_bytes = local * expert_bytes
    copies = max(1, min(math.ceil(2 * L2_BYTES / (top_k * expert_bytes)), (6 << 30) // total_bytes))
    layer = types.SimpleNamespace(experts=experts, local=local, ep=ep, top_k=top_k, hidden=hidden, inter=inter, copies=copies)
    layer.w1s = [torch.randn(local, 2 * inter, hidden, device="cuda").to(dt) for _ in range(copies)]
    layer.w2s = [torch.randn(local, hidden, inter, device="cuda").to(dt) for _ in range(copies)]
    layer.x = torch.randn(tokens, hidden, device="cuda").to(dt)
    layer.x2 = torch.randn(tokens * top_k, inter, device="cuda").to(dt)
    layer.c1 = torch.empty(tokens * top_k, 2 * inter, device="cuda", dtype=torch.bfloat16)
    layer.c2 = torch.empty(tokens * top_k, hidden, device="cuda", dtype=torch.bfloat16)
    layer.scale = torch.ones(experts, device="cuda")
    layer.ids, layer.wts = route(tokens, experts, top_k, routing == "skewed", generator)
    return layer


def choose_configs(configs, bad, dtype, is_full, default, per_shape, rng):
    """Every usable config on a full point, else --per-shape drawn ones; vLLM's default in both."""
    usable = [c for c in configs if (key(c), dtype) not in bad]
    chosen = usable if is_full else rng.sample(usable, min(per_shape, len(usable)))
    if key(default) not in {key(c) for c in chosen} and (key(default), dtype) not in bad:
        chosen.append(default)
    return chosen


def time_configs(layer, chosen, aligned, launches):
    """Each config's gate-up GEMM `launches` times, then its down GEMM, back to back, each launch on
    the next copy of the weights; the kernels' durations (us) in launch order."""
    torch.cuda.synchronize()
    turn = 0
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as profiler:
        for c in chosen:
            sorted_ids, expert_ids, total = aligned[c["BLOCK_SIZE_M"]]
            for _ in range(launches):
                fm.invoke(layer.x, layer.w1s[turn % layer.copies], layer.c1, layer.scale, layer.scale, layer.wts,
                          sorted_ids, expert_ids, total, layer.top_k, False, c)
                turn += 1
            for _ in range(launches):
                fm.invoke(layer.x2, layer.w2s[turn % layer.copies], layer.c2, layer.scale, layer.scale, layer.wts,
                          sorted_ids, expert_ids, total, 1, True, c)
                turn += 1
        torch.cuda.synchronize()
    return kernel_durations(profiler)


def measure_point(writer, point, is_full, args, configs, bad, rng, generator):
    """Measures one point's chosen configs and writes their rows; returns how many."""
    name, tp, ep, tokens, routing, dtype = point
    layer = make_layer(name, tp, ep, tokens, routing, dtype, generator)
    counts = torch.bincount(layer.ids.flatten().long(), minlength=layer.experts)[:layer.local]  # this rank's experts
    default = fm.vllm_default_config(tokens, layer.local)
    chosen = choose_configs(configs, bad, dtype, is_full, default, args.per_shape, rng)
    aligned = {}
    for c in chosen:
        if c["BLOCK_SIZE_M"] not in aligned:
            aligned[c["BLOCK_SIZE_M"]] = fm.moe_align_block_size(layer.ids, c["BLOCK_SIZE_M"], layer.experts,
                                                                 layer.local if ep > 1 else None)
    launches = args.warmup + args.reps
    durations = time_configs(layer, chosen, aligned, launches)
    if len(durations) != 2 * launches * len(chosen):
        sys.exit(f"collect_fused_moe: error: {len(durations)} kernels in the trace, expected {2 * launches * len(chosen)}")
    for j, c in enumerate(chosen):
        base = 2 * launches * j
        gemm1 = statistics.median(durations[base + args.warmup:base + launches])
        gemm2 = statistics.median(durations[base + launches + args.warmup:base + 2 * launches])
        writer.writerow([name, tp, tokens, layer.experts, layer.top_k, layer.hidden, layer.inter, dtype, routing,
                         int((counts > 0).sum()), int(counts.max()), int(is_full), *key(c),
                         int(aligned[c["BLOCK_SIZE_M"]][2].item()), round(gemm1, 3), round(gemm2, 3),
                         int(key(c) == key(default)), ep])
    return len(chosen)


def main():
    args = parse_args()
    start = time.time()
    rng = random.Random(args.seed)
    configs = pick_configs(args.configs, args.seed)
    check_against_pytorch(args.seed)
    bad = compile_all(configs, args.workers, start)
    order, full = measurement_order(args, rng)
    written = 0
    gen = torch.Generator().manual_seed(args.seed)
    with open(args.out, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["model", "tp", "tokens", "experts", "top_k", "hidden", "intermediate", "dtype", "routing",
                         "experts_touched", "max_expert_rows", "full", *CONFIG_KEYS, "padded_rows", "gemm1_us", "gemm2_us",
                         "vllm_default", "ep"])
        for index, point in enumerate(order):
            if time.time() - start > args.budget_s:
                print(f"budget reached after {index} of {len(order)} shapes", file=sys.stderr, flush=True)
                break
            written += measure_point(writer, point, point in full, args, configs, bad, rng, gen)
            out.flush()
            # The point's weight copies were freed with its layer; the allocator gives their memory back.
            torch.cuda.empty_cache()
            if index % 20 == 0:
                print(f"[{index + 1}/{len(order)}] {written} rows, {time.time() - start:.0f} s", file=sys.stderr, flush=True)
    print(f"wrote {written} rows in {time.time() - start:.0f} s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
