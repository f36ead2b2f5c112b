#!/usr/bin/env python3
"""Measures a workload's iterations on the GPU, to check `pipeweave e2e` against.

  validate_e2e.py trace [--requests N] [--seed S] > trace.csv
      a request trace (num_prefill_tokens,num_decode_tokens,output_tokens): prompts
      log-uniform from 32 to 3072 tokens, 4 to 96 decode steps; the same for a seed.
  validate_e2e.py run --workload W.json --out measured.csv [--reps N] [--profile ITER,... --kernels K.jsonl]
      runs every iteration of a workload (the published layout, as `pipeweave e2e
      --write-workload` writes it) as a decoder stack of the model's shape with random bf16
      weights, built from the operators the workload lists: cuBLAS
      GEMMs (torch.nn.functional.linear), FlashAttention-2 (PyTorch's flash backend, the
      variable-length entry point, causal), and RMSNorm (fused residual add) and SiLU-and-mul
      as vLLM writes them (the kernels of cuda_kernels/collect.cu, compiled here with nvcc).
      Under tensor parallelism N (the workload's tp_size) one process per GPU runs its shard
      (heads, MLP width and vocabulary divided by N), with NCCL all-reduces after the output and
      down projections and an all-gather of the logits, inside the same CUDA graph; rank 0's
      times are written. Each iteration is captured in a CUDA graph and replayed; the median replay time is its
      measured time (GPU time with no host overhead: the kernels and the gaps between them).
      --profile replays the named iterations once more under the PyTorch profiler (CUPTI) and
      writes each kernel's name and duration, in launch order, to --kernels.
      While the timed replays run, a thread reads the SM clock and the board power through
      NVML every 2 ms; each row carries their medians (sm_clock_mhz, power_w), so a time can
      be set beside the clock the GPU held while it ran (empty where NVML cannot be read).

Progress goes to stderr, one line per iteration.
"""
import argparse
import csv
import ctypes
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def make_trace(args):
    rng = random.Random(args.seed)
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["num_prefill_tokens", "num_decode_tokens", "output_tokens"])
    for _ in range(args.requests):
        prompt = int(round(math.exp(rng.uniform(math.log(32), math.log(3072)))))
        decodes = rng.randint(4, 96)
        out.writerow([prompt, decodes, decodes + 1])


KERNEL_LAUNCHERS = r"""
extern "C" void pw_fused_add_rms_norm(void* input, void* residual, const void* weight, int tokens, int hidden, void* stream) {
  const int threads = hidden < (tokens < 256 ? 1024 : 256) ? hidden : (tokens < 256 ? 1024 : 256);
  fused_add_rms_norm_kernel<__nv_bfloat16><<<tokens, threads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<__nv_bfloat16*>(input), static_cast<__nv_bfloat16*>(residual),
      static_cast<const __nv_bfloat16*>(weight), 1e-5f, hidden);
}
extern "C" void pw_silu_and_mul(void* out, const void* input, int tokens, int dim, void* stream) {
  const int threads = dim < 1024 ? dim : 1024;
  silu_and_mul_kernel<__nv_bfloat16><<<tokens, threads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<__nv_bfloat16*>(out), static_cast<const __nv_bfloat16*>(input), dim);
}
extern "C" int pw_last_error() { return static_cast<int>(cudaGetLastError()); }
"""


def build_kernels(workdir):
    """The RMSNorm and SiLU-and-mul kernels of collect.cu, with C launchers, as a shared library."""
    source = open(os.path.join(HERE, "collect.cu")).read()
    start = source.index("// ---- RMSNorm and SiLU-and-mul, as vLLM writes them")
    end = source.index("void collect_rows(")
    path = os.path.join(workdir, "pw_kernels.cu")
    with open(path, "w") as f:
        f.write("#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n#include <cuda_runtime.h>\n")
        f.write(source[start:end])
        f.write(KERNEL_LAUNCHERS)
    library = os.path.join(workdir, "libpw_kernels.so")
    nvcc = os.environ.get("NVCC", "nvcc")
    subprocess.run([nvcc, "-O3", "-std=c++17", "-arch=native", "-shared", "-Xcompiler", "-fPIC", "-o", library, path],
                   check=True)
    lib = ctypes.CDLL(library)
    lib.pw_fused_add_rms_norm.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                          ctypes.c_void_p]
    lib.pw_silu_and_mul.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    return lib


def run_tensor_parallel(rank, args, world):
    import torch
    import torch.distributed as dist
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29518")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    try:
        run(args, rank, world)
    finally:
        dist.destroy_process_group()


def run(args, rank=0, world=1):
    import torch
    import torch.nn.functional as F

    workload = json.load(open(args.workload))
    if workload["tp_size"] != world:
        sys.exit(f"validate_e2e.py: error: the workload is for tensor parallelism {workload['tp_size']}, run on {world}")
    p = workload["model_params"]
    if p.get("num_experts", 0):
        sys.exit("validate_e2e.py: error: the decoder stack here is dense")
    H, hd, L = p["hidden_size"], p["head_dim"], p["num_hidden_layers"]
    # Per GPU under tensor parallelism (Megatron split): heads, MLP width and vocabulary divided.
    nh, nkv = p["num_attention_heads"] // world, max(1, p["num_key_value_heads"] // world)
    I, V = p["intermediate_size"] // world, p["vocab_size"] // world
    expected = {"qkv_proj": ((nh + 2 * nkv) * hd, H), "o_proj": (H, nh * hd), "gate_up_proj": (2 * I, H),
                "down_proj": (H, I), "lm_head": (V, H)}
    for it in workload["iterations"]:
        for g in it["operators"]["gemm"]:
            if (g["N"], g["K"]) != expected[g["name"]]:
                sys.exit(f"validate_e2e.py: error: iteration {it['iteration']} {g['name']} is N={g['N']}, K={g['K']}; "
                         f"this stack runs N, K = {expected[g['name']]}")
    if world > 1:
        import torch.distributed as dist
    dev = torch.device("cuda", rank)
    torch.manual_seed(rank)
    lib = build_kernels(tempfile.mkdtemp())
    chatty = rank == 0

    def weight(rows, cols):
        return (torch.randn(rows, cols, device=dev, dtype=torch.bfloat16) * 0.02)

    if chatty:
        print(f"weights per GPU ({world}): {L} layers of {H} hidden, {I} MLP, {nh}/{nkv} heads of {hd}, vocabulary {V}",
              file=sys.stderr)
    w_qkv = [weight((nh + 2 * nkv) * hd, H) for _ in range(L)]
    w_o = [weight(H, nh * hd) for _ in range(L)]
    w_gate_up = [weight(2 * I, H) for _ in range(L)]
    w_down = [weight(H, I) for _ in range(L)]
    w_norm = torch.ones(H, device=dev, dtype=torch.bfloat16)
    w_lm = weight(V, H)

    def iteration_call(it):
        ops = it["operators"]
        q_lens, kv_lens = it["q_lengths"], it["kv_lengths"]
        T = sum(q_lens)
        logits = next((g["M"] for g in ops["gemm"] if g["name"] == "lm_head"), 0)
        cu_q = torch.tensor([0] + list(accumulate(q_lens)), device=dev, dtype=torch.int32)
        cu_k = torch.tensor([0] + list(accumulate(kv_lens)), device=dev, dtype=torch.int32)
        q = torch.randn(T, nh, hd, device=dev, dtype=torch.bfloat16)
        k = torch.randn(sum(kv_lens), nkv, hd, device=dev, dtype=torch.bfloat16)
        v = torch.randn(sum(kv_lens), nkv, hd, device=dev, dtype=torch.bfloat16)
        x0 = torch.randn(T, H, device=dev, dtype=torch.bfloat16)
        residual = torch.randn(T, H, device=dev, dtype=torch.bfloat16)
        act = torch.empty(T, I, device=dev, dtype=torch.bfloat16)
        max_q, max_k = max(q_lens), max(kv_lens)
        gathered = torch.empty(world * max(logits, 1), V, device=dev, dtype=torch.bfloat16)

        def call():
            stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
            x = x0
            for layer in range(L):
                lib.pw_fused_add_rms_norm(x.data_ptr(), residual.data_ptr(), w_norm.data_ptr(), T, H, stream)
                F.linear(x, w_qkv[layer])
                out = torch.ops.aten._flash_attention_forward(q, k, v, cu_q, cu_k, max_q, max_k, 0.0, True, False)[0]
                x = F.linear(out.view(T, nh * hd), w_o[layer])
                if world > 1:
                    dist.all_reduce(x)
                lib.pw_fused_add_rms_norm(x.data_ptr(), residual.data_ptr(), w_norm.data_ptr(), T, H, stream)
                gate_up = F.linear(x, w_gate_up[layer])
                lib.pw_silu_and_mul(act.data_ptr(), gate_up.data_ptr(), T, I, stream)
                x = F.linear(act, w_down[layer])
                if world > 1:
                    dist.all_reduce(x)
            lib.pw_fused_add_rms_norm(x.data_ptr(), residual.data_ptr(), w_norm.data_ptr(), T, H, stream)
            if logits:
                local = F.linear(x[:logits], w_lm)
                if world > 1:
                    dist.all_gather_into_tensor(gathered[:world * logits], local)

        return call

    kernel_log = open(args.kernels, "w") if args.profile else None
    out = open(args.out if chatty else os.devnull, "w")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["iteration", "phase", "num_tokens", "batch_size", "measured_us", "spread", "reps", "sm_clock_mhz",
                     "power_w"])
    props = torch.cuda.get_device_properties(rank)
    sampler = ClockSampler(index=rank, pci_bus_id=f"{props.pci_domain_id:08x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0")
    started = time.time()
    for index, it in enumerate(workload["iterations"]):
        call = iteration_call(it)
        call()  # warm-up outside the graph: cuBLAS picks its kernels, FlashAttention its splits
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            call()
        for _ in range(2):
            graph.replay()
        torch.cuda.synchronize()
        if world > 1:
            dist.barrier()  # every rank starts its timed replays together: their collectives meet
        times = []
        with sampler:
            for _ in range(args.reps):
                begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                begin.record()
                graph.replay()
                end.record()
                end.synchronize()
                times.append(begin.elapsed_time(end) * 1000)
        clock_mhz, power_w = sampler.medians()
        if lib.pw_last_error() != 0:
            sys.exit(f"validate_e2e.py: error: a kernel failed in iteration {it['iteration']}")
        if it["iteration"] in args.profile:
            profile_kernels(graph, it["iteration"], kernel_log)
        times.sort()
        median = times[len(times) // 2]
        spread = (times[-1] - times[0]) / median
        writer.writerow([it["iteration"], it["phase"], sum(it["q_lengths"]), len(it["q_lengths"]), f"{median:.2f}",
                         f"{spread:.4f}", args.reps, clock_mhz, power_w])
        out.flush()
        if chatty:
            print(f"[{index + 1}/{len(workload['iterations'])}] iteration {it['iteration']} {it['phase']}: "
                  f"{sum(it['q_lengths'])} tokens, {len(it['q_lengths'])} requests: {median / 1000:.3f} ms "
                  f"(spread {100 * spread:.1f}%, SM {clock_mhz or '?'} MHz, {power_w or '?'} W, "
                  f"{time.time() - started:.0f} s)", file=sys.stderr)
        del graph
        torch.cuda.empty_cache()
    if chatty:
        print(json.dumps({"gpu": props.name, "gpus": world, "torch": torch.__version__, "cuda": torch.version.cuda,
                          "nccl": ".".join(map(str, torch.cuda.nccl.version())) if world > 1 else None,
                          "workload": os.path.basename(args.workload), "iterations": len(workload["iterations"]),
                          "reps": args.reps, "timing": "CUDA graph replay, CUDA events, median"}), file=sys.stderr)


def profile_kernels(graph, iteration, log):
    import torch
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        graph.replay()
        torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type.name == "CUDA"]
    events.sort(key=lambda e: e.time_range.start)
    for e in events:
        log.write(json.dumps({"iteration": iteration, "kernel": e.name, "us": e.time_range.elapsed_us(),
                              "start_us": e.time_range.start}) + "\n")
    log.flush()


class ClockSampler:
    """Samples the SM clock (MHz) and board power (W) of one GPU through NVML on a thread."""

    def __init__(self, period_s=0.002, index=0, pci_bus_id=None):
        import threading
        self.period_s, self.samples, self.running = period_s, [], False
        self.lock, self.threading = threading.Lock(), threading
        try:
            self.nvml = ctypes.CDLL("libnvidia-ml.so.1")
            self.handle = ctypes.c_void_p()
            # NVML numbers GPUs ignoring CUDA_VISIBLE_DEVICES: find this process's GPU by its PCI bus id.
            # (falls back to the index where the bus id is not found)
            found = self.nvml.nvmlInit_v2() == 0 and (
                (pci_bus_id and self.nvml.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.encode(), ctypes.byref(self.handle)) == 0)
                or self.nvml.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(self.handle)) == 0)
            if not found:
                self.nvml = None
        except OSError:
            self.nvml = None

    def read(self):
        clock, milliwatts = ctypes.c_uint(), ctypes.c_uint()
        if self.nvml.nvmlDeviceGetClockInfo(self.handle, 1, ctypes.byref(clock)) != 0:  # NVML_CLOCK_SM
            return None
        if self.nvml.nvmlDeviceGetPowerUsage(self.handle, ctypes.byref(milliwatts)) != 0:
            return None
        return clock.value, milliwatts.value / 1000

    def loop(self):
        while self.running:
            sample = self.read()
            if sample:
                with self.lock:
                    self.samples.append(sample)
            time.sleep(self.period_s)

    def __enter__(self):
        self.samples = []
        if self.nvml:
            self.running = True
            self.thread = self.threading.Thread(target=self.loop, daemon=True)
            self.thread.start()
        return self

    def __exit__(self, *exc):
        if self.nvml:
            self.running = False
            self.thread.join()

    def medians(self):
        """(median SM clock MHz, median power W) as text, empty strings without samples."""
        if not self.samples:
            return "", ""
        clocks = sorted(c for c, _ in self.samples)
        powers = sorted(p for _, p in self.samples)
        return str(clocks[len(clocks) // 2]), f"{powers[len(powers) // 2]:.0f}"


def accumulate(values):
    total = 0
    for value in values:
        total += value
        yield total


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    trace = commands.add_parser("trace")
    trace.add_argument("--requests", type=int, default=48)
    trace.add_argument("--seed", type=int, default=1)
    measure = commands.add_parser("run")
    measure.add_argument("--workload", required=True)
    measure.add_argument("--out", required=True)
    measure.add_argument("--reps", type=int, default=5)
    measure.add_argument("--profile", type=lambda text: {int(x) for x in text.split(",") if x}, default=set())
    measure.add_argument("--kernels", default="kernels.jsonl")
    args = parser.parse_args()
    if args.command == "trace":
        make_trace(args)
        return
    tp = json.load(open(args.workload))["tp_size"]
    if args.profile and tp > 1:
        sys.exit("validate_e2e.py: error: --profile runs on one GPU only (tensor parallelism 1)")
    if tp == 1:
        run(args)
    else:  # one process per GPU, NCCL between them; rank 0 writes --out
        import torch.multiprocessing as mp
        mp.spawn(run_tensor_parallel, args=(args, tp), nprocs=tp)


if __name__ == "__main__":
    main()
