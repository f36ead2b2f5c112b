#!/usr/bin/env python3
"""Measures FlashAttention on the GPU in hand, for pipeweave's attention training data.

    python3 collect_attention.py --shapes data/shapes/attention.csv --out attention.jsonl [--reps 10] [--warmup 3]

The shape list is what `pipeweave shapes --op attention` prints
(dtype,q_lens,kv_lens,heads,kv_heads,head_dim,causal; lengths joined by '/'). Each batch runs
through PyTorch's FlashAttention-2 (torch.ops.aten._flash_attention_forward, the variable-length
entry point, so ragged batches and cached prefixes are real); PyTorch is the only dependency,
which is why this one op is measured from Python: pipeweave-collect (collect.cu) measures the
others. Timing comes from CUPTI through the PyTorch profiler: every kernel the call launches,
first start to last end, after the L2 is flushed (a buffer twice its size read, so that no dirty
line is left to be written back during the timed call) before each call.
The output is raw JSON lines in the layout of pipeweave-collect's (a "device" line, then one
line per batch, with the kernels' names and launch grids); `pipeweave collect --from-raw`
turns it into the measurement CSV.
"""
import argparse
import csv
import json
import os
import sys
import tempfile

import torch

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
MARKERS = ("spin_kernel", "sleep")  # torch.cuda._sleep's kernel marks the start of each call in the trace


def driver_version():
    try:
        with open("/proc/driver/nvidia/version") as f:
            for word in f.readline().split():
                if "." in word and word[0].isdigit():
                    return word
    except OSError:
        pass
    return "unknown"


def cuda_runtime():  # "13.0" -> 13000, as cudaRuntimeGetVersion reports it
    if not torch.version.cuda:
        return 0
    major, minor = (int(v) for v in torch.version.cuda.split(".")[:2])
    return major * 1000 + minor * 10


def batch_bytes(shape):
    size = 2  # bf16/fp16
    return size * shape["head_dim"] * (sum(shape["q_lens"]) * shape["heads"] * 2 + sum(shape["kv_lens"]) * shape["kv_heads"] * 2)


def read_shapes(path):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        expected = ["dtype", "q_lens", "kv_lens", "heads", "kv_heads", "head_dim", "causal"]
        if reader.fieldnames != expected:
            sys.exit(f"collect_attention: error: {path}: the header row must be {','.join(expected)}")
        rows = []
        for number, row in enumerate(reader, start=2):
            q = [int(v) for v in row["q_lens"].split("/")]
            kv = [int(v) for v in row["kv_lens"].split("/")]
            if len(q) != len(kv) or any(a <= 0 or b < a for a, b in zip(q, kv)):
                sys.exit(f"collect_attention: error: {path}:{number}: q_lens and kv_lens must pair up, kv >= q > 0")
            rows.append(dict(dtype=row["dtype"], q_lens=q, kv_lens=kv, heads=int(row["heads"]),
                             kv_heads=int(row["kv_heads"]), head_dim=int(row["head_dim"]), causal=row["causal"] == "1"))
        return rows


def make_call(shape):
    dtype = DTYPES[shape["dtype"]]
    q_lens, kv_lens = shape["q_lens"], shape["kv_lens"]
    q = torch.randn(sum(q_lens), shape["heads"], shape["head_dim"], device="cuda", dtype=dtype)
    k = torch.randn(sum(kv_lens), shape["kv_heads"], shape["head_dim"], device="cuda", dtype=dtype)
    v = torch.randn_like(k)
    cum_q = torch.tensor([0] + list(torch.tensor(q_lens).cumsum(0)), dtype=torch.int32, device="cuda")
    cum_k = torch.tensor([0] + list(torch.tensor(kv_lens).cumsum(0)), dtype=torch.int32, device="cuda")
    max_q, max_k, causal = max(q_lens), max(kv_lens), shape["causal"]

    def call():
        torch.ops.aten._flash_attention_forward(q, k, v, cum_q, cum_k, max_q, max_k, 0.0, causal, False)

    return call


def kernel_events(trace_path):
    with open(trace_path) as f:
        trace = json.load(f)
    events = [e for e in trace.get("traceEvents", []) if e.get("cat") == "kernel" and e.get("ph") == "X"]
    events.sort(key=lambda e: e["ts"])
    return events


def measure_chunk(shapes, args, flush):
    """Runs a chunk of shapes under one profiler session; returns (kernels, grids, durations) per shape."""
    calls = [make_call(s) for s in shapes]
    torch.cuda.synchronize()
    activities = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as profiler:
        for call in calls:
            for _ in range(args.warmup + args.reps):
                torch.sum(flush, dtype=torch.int64)  # a read-only flush: see collect.cu
                torch.cuda._sleep(1)
                call()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        profiler.export_chrome_trace(path)
        events = kernel_events(path)
    # One group per call: the kernels after each marker whose names say flash.
    groups = []
    for event in events:
        if any(marker in event["name"] for marker in MARKERS):
            groups.append([])
        elif groups and "flash" in event["name"]:
            groups[-1].append(event)
    expected = len(shapes) * (args.warmup + args.reps)
    if len(groups) != expected or any(not g for g in groups):
        sys.exit(f"collect_attention: error: the trace holds {len(groups)} calls ({sum(1 for g in groups if g)} with "
                 f"FlashAttention kernels), expected {expected}")
    results = []
    for i in range(len(shapes)):
        timed = groups[i * (args.warmup + args.reps) + args.warmup:(i + 1) * (args.warmup + args.reps)]
        durations = [max(e["ts"] + e["dur"] for e in g) - min(e["ts"] for e in g) for g in timed]
        names = [e["name"] for e in timed[0]]
        grids = [e.get("args", {}).get("grid", []) for e in timed[0]]
        results.append((names, grids, durations))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--chunk", type=int, default=40, help="at most this many shapes per profiler session")
    parser.add_argument("--chunk-gb", type=float, default=16, help="and at most this much input data")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("collect_attention: error: no CUDA GPU is visible to PyTorch")
    shapes = read_shapes(args.shapes)
    props = torch.cuda.get_device_properties(0)
    l2_bytes = getattr(props, "L2_cache_size", 50 * 1024 * 1024)
    flush = torch.zeros(2 * l2_bytes // 4, dtype=torch.int32, device="cuda")
    with open(args.out, "w") as out:
        out.write(json.dumps({
            "op": "device", "name": props.name, "compute_capability": f"{props.major}.{props.minor}",
            "sm_count": props.multi_processor_count, "driver": driver_version(),
            "cuda_runtime": cuda_runtime(),
            "implementation": "torch.ops.aten._flash_attention_forward (FlashAttention-2), torch " + torch.__version__,
            "reps": args.reps, "warmup": args.warmup, "l2": "cold"}) + "\n")
        start = 0
        while start < len(shapes):
            end, total = start, 0
            while end < len(shapes) and end - start < args.chunk and (end == start or total + batch_bytes(shapes[end]) <= args.chunk_gb * 1e9):
                total += batch_bytes(shapes[end])
                end += 1
            chunk = shapes[start:end]
            for shape, (names, grids, durations) in zip(chunk, measure_chunk(chunk, args, flush)):
                record = {"op": "attention", "dtype": shape["dtype"], "q_lens": shape["q_lens"], "kv_lens": shape["kv_lens"],
                          "heads": shape["heads"], "kv_heads": shape["kv_heads"], "head_dim": shape["head_dim"],
                          "causal": 1 if shape["causal"] else 0, "implementation": "flash2", "l2": "cold",
                          "kernels": names, "grids": grids, "durations_us": [round(d, 3) for d in durations]}
                out.write(json.dumps(record) + "\n")
            out.flush()
            start = end
            print(f"[{end}/{len(shapes)}] attention", file=sys.stderr, flush=True)
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
