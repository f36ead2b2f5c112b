#!/usr/bin/env python3
"""Measures FlashAttention on the GPU in hand, for pipeweave's attention training data.

    python3 collect_attention.py --shapes data/shapes/attention.csv --out attention.jsonl [--reps 10] [--warmup 3]
        [--impl flash2|flash3 [--fa3-path DIR] [--page-size P]] [--sms N]

The shape list is what `pipeweave shapes --op attention` prints
(dtype,q_lens,kv_lens,heads,kv_heads,head_dim,causal; lengths joined by '/'). With --impl flash2
(the default) each batch runs through PyTorch's FlashAttention-2
(torch.ops.aten._flash_attention_forward, the variable-length entry point, so ragged batches and
cached prefixes are real); PyTorch is the only dependency, which is why this one op is measured
from Python: pipeweave-collect (collect.cu) measures the others.
With --impl flash3 it runs FlashAttention-3 (built from ../shared/vendor, see
cuda_kernels/build_fa3.sh; --fa3-path names its hopper/ folder) as the serving engines call it:
a batch with prompt tokens through flash_attn_varlen_func (ragged, KV contiguous), a decode batch
(one query token per sequence) through flash_attn_with_kvcache over a paged KV cache of
--page-size tokens a page (1: SGLang's default; 16: vLLM's; 0: a contiguous cache), pages laid
out in order, with FlashAttention-3's own split and pack-GQA heuristics (num_splits=0). Timing comes from CUPTI through the PyTorch profiler: every kernel the call launches,
first start to last end, after the L2 is flushed (a buffer twice its size read, so that no dirty
line is left to be written back during the timed call) before each call.
With --sms N every kernel runs on N of the GPU's SMs (a CUDA green context: the same memory system
with fewer SMs, another compute/memory balance; N is rounded up to the hardware's granularity, 8 on
Hopper), as pipeweave-collect --sms confines its kernels; FlashAttention-3 is told the SMs it has
(sm_margin), so its split and scheduler heuristics plan for N SMs. FlashAttention-2 (PyTorch) has
no such argument: its decode split heuristic reads the whole GPU's count, and the records name the
kernels and grids that ran. A probe GEMM checks the confinement (it must slow down about as the
SM count falls) before anything is measured.
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
# The marker also holds the GPU long enough (about 100 us) for the host to queue the whole call
# behind it: FlashAttention-3 launches a scheduler kernel, then does host work, then the
# attention kernel; with the GPU idle in between, a tiny call measured ~30 us of host time
# (a CUDA graph, as the engines run decode, has no such gap).
SLEEP_CYCLES = 200_000


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


class GreenContext:
    """N of the GPU's SMs: a green context made through the driver API (ctypes, as PyTorch ships no
    binding in every version), whose stream PyTorch runs on as an external stream. Fields as
    pipeweave-collect's device line has them (tool_support.cuh, SmLimit)."""

    SM_RESOURCE = 1          # CU_DEV_RESOURCE_TYPE_SM
    DEFAULT_STREAM = 1       # CU_GREEN_CTX_DEFAULT_STREAM
    NON_BLOCKING = 1         # CU_STREAM_NON_BLOCKING
    RESOURCE_BYTES = 4096    # room for a CUdevResource of any toolkit (144 bytes in CUDA 12.4)
    SM_COUNT_OFFSET = 96     # CUdevResource: the type (4 bytes), 92 bytes of padding, then sm.smCount

    def __init__(self, requested):
        import ctypes
        self.requested = requested
        torch.zeros(1, device="cuda")  # the primary context first, as the driver advises
        cuda = ctypes.CDLL("libcuda.so.1")

        def call(name, *arguments):
            status = getattr(cuda, name)(*arguments)
            if status != 0:
                text = ctypes.c_char_p()
                cuda.cuGetErrorString(status, ctypes.byref(text))
                sys.exit(f"collect_attention: error: --sms {requested}: {name} failed: "
                         f"{text.value.decode() if text.value else status}")

        def sm_count(resource):
            return int.from_bytes(resource.raw[self.SM_COUNT_OFFSET:self.SM_COUNT_OFFSET + 4], "little")

        device = ctypes.c_int()
        call("cuDeviceGet", ctypes.byref(device), torch.cuda.current_device())
        whole = ctypes.create_string_buffer(self.RESOURCE_BYTES)
        call("cuDeviceGetDevResource", device, whole, self.SM_RESOURCE)
        self.device_sm_count = sm_count(whole)
        if requested > self.device_sm_count:
            sys.exit(f"collect_attention: error: --sms {requested}: the GPU has {self.device_sm_count} SMs")
        group = ctypes.create_string_buffer(self.RESOURCE_BYTES)
        remaining = ctypes.create_string_buffer(self.RESOURCE_BYTES)
        groups = ctypes.c_uint(1)
        call("cuDevSmResourceSplitByCount", group, ctypes.byref(groups), whole, remaining, ctypes.c_uint(0),
             ctypes.c_uint(requested))
        self.obtained = sm_count(group)
        if groups.value < 1 or self.obtained == 0:
            sys.exit(f"collect_attention: error: --sms {requested}: cannot split off a group of {requested} SMs")
        desc = ctypes.c_void_p()
        call("cuDevResourceGenerateDesc", ctypes.byref(desc), group, ctypes.c_uint(1))
        self.green = ctypes.c_void_p()
        call("cuGreenCtxCreate", ctypes.byref(self.green), desc, device, ctypes.c_uint(self.DEFAULT_STREAM))
        handle = ctypes.c_void_p()
        call("cuGreenCtxStreamCreate", ctypes.byref(handle), self.green, ctypes.c_uint(self.NON_BLOCKING), ctypes.c_int(0))
        self.stream = torch.cuda.ExternalStream(handle.value)

    def check(self):
        """A large GEMM on the whole GPU and on the group: the group's must take about device/obtained
        times as long (at least 60% of that), else the kernels are not confined and nothing is measured."""
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)

        def timed(stream):
            with torch.cuda.stream(stream):
                for _ in range(2):
                    a @ a
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(5):
                    a @ a
                end.record()
            end.synchronize()
            return start.elapsed_time(end) / 5

        whole = timed(torch.cuda.current_stream())
        confined = timed(self.stream)
        self.slowdown = confined / whole
        expected = self.device_sm_count / self.obtained
        print(f"collect_attention: --sms {self.requested}: {self.obtained} of {self.device_sm_count} SMs; an 8192^3 bf16 "
              f"GEMM takes {whole:.3f} ms on the GPU, {confined:.3f} ms on the group ({self.slowdown:.2f}x, "
              f"{expected:.2f}x expected)", file=sys.stderr, flush=True)
        if self.slowdown < 0.6 * expected:
            sys.exit(f"collect_attention: error: --sms {self.requested}: the probe GEMM ran only {self.slowdown:.2f}x slower "
                     f"on {self.obtained} SMs than on {self.device_sm_count}: the kernels are not confined")

    def device_fields(self):
        return {"sm_count": self.obtained, "sm_limit": self.obtained, "sm_requested": self.requested,
                "device_sm_count": self.device_sm_count, "probe_slowdown": round(self.slowdown, 3)}


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


def fa3_tiles(shape, paged_non_tma, page_size=0):
    """FlashAttention-3's kBlockM x kBlockN on sm90 for 16-bit inputs (hopper/tile_size.h). Decode
    drops the causal mask except for head sizes 65-128 over a paged cache (flash_api.cpp)."""
    hd, causal = shape["head_dim"], shape["causal"]
    if is_decode(shape) and not (64 < hd <= 128 and page_size > 0):
        causal = False
    if hd <= 64:
        return 192, 128 if causal or paged_non_tma else 192
    if hd <= 96:
        return 192, 128 if paged_non_tma else 144
    if hd <= 128:
        return 128, 128 if causal or paged_non_tma else 176
    if hd <= 192:
        return 128, 96 if paged_non_tma else 128
    return 128, 80


def is_decode(shape):
    return all(q == 1 for q in shape["q_lens"])


def make_call_fa3(shape, fa3, page_size, sm_margin=0):
    dtype = DTYPES[shape["dtype"]]
    q_lens, kv_lens = shape["q_lens"], shape["kv_lens"]
    h, hk, d = shape["heads"], shape["kv_heads"], shape["head_dim"]
    if not is_decode(shape):
        q = torch.randn(sum(q_lens), h, d, device="cuda", dtype=dtype)
        k = torch.randn(sum(kv_lens), hk, d, device="cuda", dtype=dtype)
        v = torch.randn_like(k)
        cum_q = torch.tensor([0] + list(torch.tensor(q_lens).cumsum(0)), dtype=torch.int32, device="cuda")
        cum_k = torch.tensor([0] + list(torch.tensor(kv_lens).cumsum(0)), dtype=torch.int32, device="cuda")
        max_q, max_k, causal = max(q_lens), max(kv_lens), shape["causal"]

        def call():
            fa3.flash_attn_varlen_func(q, k, v, cum_q, cum_k, max_q, max_k, causal=causal, num_splits=0,
                                       sm_margin=sm_margin)

        return call, fa3_tiles(shape, False), 0
    batch = len(q_lens)
    q = torch.randn(batch, 1, h, d, device="cuda", dtype=dtype)
    seqlens = torch.tensor(kv_lens, dtype=torch.int32, device="cuda")
    if page_size == 0:
        k_cache = torch.randn(batch, max(kv_lens), hk, d, device="cuda", dtype=dtype)
        v_cache = torch.randn_like(k_cache)
        page_table = None
    else:
        pages = [(n + page_size - 1) // page_size for n in kv_lens]
        k_cache = torch.randn(sum(pages), page_size, hk, d, device="cuda", dtype=dtype)
        v_cache = torch.randn_like(k_cache)
        table = torch.zeros(batch, max(pages), dtype=torch.int32)
        first = 0
        for i, n in enumerate(pages):
            table[i, :n] = torch.arange(first, first + n, dtype=torch.int32)
            first += n
        page_table = table.cuda()
    causal = shape["causal"]

    def call():
        fa3.flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=seqlens, page_table=page_table, causal=causal,
                                    num_splits=0, sm_margin=sm_margin)

    # FlashAttention-3 reads a paged cache through TMA only when pages hold whole KV tiles and a
    # head group's query rows fill more than a tile (get_pagedkv_tma): never for decode.
    tiles = fa3_tiles(shape, False, page_size)
    non_tma = page_size > 0 and (page_size % tiles[1] != 0 or shape["heads"] // shape["kv_heads"] <= tiles[0])
    return call, fa3_tiles(shape, non_tma, page_size), page_size


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


def measure_chunk(shapes, args, flush, fa3, sm_margin=0):
    """Runs a chunk of shapes under one profiler session; returns (kernels, grids, durations) per shape."""
    calls = [make_call_fa3(s, fa3, args.page_size, sm_margin)[0] if fa3 else make_call(s) for s in shapes]
    torch.cuda.synchronize()
    activities = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as profiler:
        for call in calls:
            for _ in range(args.warmup + args.reps):
                torch.sum(flush, dtype=torch.int64)  # a read-only flush: see collect.cu
                torch.cuda._sleep(SLEEP_CYCLES)
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
        busy = [sum(e["dur"] for e in g) for g in timed]  # the kernels alone, without the gaps between them
        names = [e["name"] for e in timed[0]]
        grids = [e.get("args", {}).get("grid", []) for e in timed[0]]
        results.append((names, grids, durations, busy))
    return results


def measure_in(green, chunk, args, flush, fa3, sm_margin):
    if green is None:
        return measure_chunk(chunk, args, flush, fa3)
    with torch.cuda.stream(green.stream):  # the flush, the marker and the call, all on the group's SMs
        return measure_chunk(chunk, args, flush, fa3, sm_margin)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--chunk", type=int, default=40, help="at most this many shapes per profiler session")
    parser.add_argument("--chunk-gb", type=float, default=16, help="and at most this much input data")
    parser.add_argument("--impl", choices=["flash2", "flash3"], default="flash2")
    parser.add_argument("--fa3-path", help="FlashAttention-3's hopper/ folder (built in place), for --impl flash3")
    parser.add_argument("--sms", type=int, default=0,
                        help="run every kernel on this many of the GPU's SMs (a green context; 0: all of them)")
    parser.add_argument("--page-size", type=int, default=1,
                        help="--impl flash3: tokens per page of the decode batches' KV cache (0: contiguous)")
    args = parser.parse_args()
    fa3 = None
    if args.impl == "flash3":
        if args.fa3_path:
            sys.path.insert(0, args.fa3_path)
        try:
            from flash_attn_3 import flash_attn_interface as fa3  # hopper/flash_attn_3, built in place
        except ImportError as error:
            sys.exit(f"collect_attention: error: FlashAttention-3 is not importable ({error}); build it with cuda_kernels/build_fa3.sh")
        if args.page_size < 0:
            sys.exit("collect_attention: error: --page-size must be >= 0")
    if not torch.cuda.is_available():
        sys.exit("collect_attention: error: no CUDA GPU is visible to PyTorch")
    if args.sms < 0:
        sys.exit("collect_attention: error: --sms must be >= 0 (0: the whole GPU)")
    shapes = read_shapes(args.shapes)
    green = None
    if args.sms > 0:
        green = GreenContext(args.sms)
        green.check()
    props = torch.cuda.get_device_properties(0)
    l2_bytes = getattr(props, "L2_cache_size", 50 * 1024 * 1024)
    flush = torch.zeros(2 * l2_bytes // 4, dtype=torch.int32, device="cuda")
    with open(args.out, "w") as out:
        out.write(json.dumps({
            "op": "device", "name": props.name, "compute_capability": f"{props.major}.{props.minor}",
            "sm_count": props.multi_processor_count, "driver": driver_version(),
            "cuda_runtime": cuda_runtime(),
            "implementation": ("FlashAttention-3 (flash_attn_varlen_func, flash_attn_with_kvcache), torch " if fa3 else
                               "torch.ops.aten._flash_attention_forward (FlashAttention-2), torch ") + torch.__version__,
            "reps": args.reps, "warmup": args.warmup, "l2": "cold",
            **(green.device_fields() if green else {})}) + "\n")
        sm_margin = green.device_sm_count - green.obtained if green else 0
        start = 0
        while start < len(shapes):
            end, total = start, 0
            while end < len(shapes) and end - start < args.chunk and (end == start or total + batch_bytes(shapes[end]) <= args.chunk_gb * 1e9):
                total += batch_bytes(shapes[end])
                end += 1
            chunk = shapes[start:end]
            for shape, (names, grids, durations, busy) in zip(chunk, measure_in(green, chunk, args, flush, fa3, sm_margin)):
                record = {"op": "attention", "dtype": shape["dtype"], "q_lens": shape["q_lens"], "kv_lens": shape["kv_lens"],
                          "heads": shape["heads"], "kv_heads": shape["kv_heads"], "head_dim": shape["head_dim"],
                          "causal": 1 if shape["causal"] else 0, "implementation": args.impl, "l2": "cold",
                          "kernels": names, "grids": grids, "durations_us": [round(d, 3) for d in durations],
                          "kernel_busy_us": [round(d, 3) for d in busy]}
                if fa3:  # FlashAttention-3's names do not carry its tiles: the rule it chose them by
                    decode = is_decode(shape)
                    page_size = args.page_size if decode else 0
                    tma_tiles = fa3_tiles(shape, False, page_size)
                    fills = shape["heads"] // shape["kv_heads"] > tma_tiles[0]  # one query token a sequence
                    tiles = fa3_tiles(shape, decode and page_size > 0 and (page_size % tma_tiles[1] != 0 or not fills),
                                      page_size)
                    record.update({"tile_q": tiles[0], "tile_kv": tiles[1], "page_size": page_size})
                out.write(json.dumps(record) + "\n")
            out.flush()
            start = end
            print(f"[{end}/{len(shapes)}] attention", file=sys.stderr, flush=True)
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
