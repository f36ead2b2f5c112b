#!/usr/bin/env python3
"""Measures NCCL all-reduce on the GPUs of one host, to check the collective model against.

  measure_allreduce.py --out allreduce.csv [--ranks N] [--reps N]

Spawns one process per GPU (torch.distributed, NCCL), and for bf16 buffers from 4 KiB to
256 MiB (doubling) times all_reduce (sum) with CUDA events, three ways:
  eager   one call between two events, as a host launching one collective sees it
          (the host's launch latency lies inside the window for small messages);
  graph   --calls calls captured in one CUDA graph, the replay's time divided by --calls:
          the GPU's own time per all-reduce, as a serving engine's CUDA-graph decode runs it
          (falls back to nothing, with a message, where NCCL cannot be captured);
  stream  --calls pairs of (GEMM tokens x hidden x hidden that writes the buffer, all-reduce of
          it) in one CUDA graph, less the same GEMMs alone, per call: the all-reduce as a
          tensor-parallel layer runs it, waiting for the GEMM on both GPUs (sizes that are a
          whole number of rows of --hidden; rows where the difference is not positive are dropped).
5 warm-up calls, then --reps timed ones, the median. Rank 0 writes
`ranks,bytes,mode,measured_us,spread` (bytes: each rank's buffer, as
`all_reduce:bytes=...,ranks=...` takes it). Progress goes to stderr.
"""
import argparse
import os
import sys


def worker(rank, args):
    import torch
    import torch.distributed as dist
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=args.ranks)
    sizes = [4096 * 2 ** i for i in range(0, 17)]  # 4 KiB .. 256 MiB
    rows = []
    graph_ok = True

    def timed(run, calls):
        for _ in range(2):
            run()
        torch.cuda.synchronize()
        dist.barrier()
        times = []
        for _ in range(args.reps):
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            run()
            end.record()
            end.synchronize()
            times.append(begin.elapsed_time(end) * 1000 / calls)
        times.sort()
        median = times[len(times) // 2]
        return median, (times[-1] - times[0]) / median

    for size in sizes:
        buffer = torch.ones(size // 2, dtype=torch.bfloat16, device="cuda")
        for _ in range(5):
            dist.all_reduce(buffer)
        torch.cuda.synchronize()
        median, spread = timed(lambda: dist.all_reduce(buffer), 1)
        rows.append((args.ranks, size, "eager", median, spread))
        line = f"all_reduce {size} bytes x {args.ranks} ranks: eager {median:.1f} us"
        if graph_ok:
            try:
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    for _ in range(args.calls):
                        dist.all_reduce(buffer)
                median, spread = timed(graph.replay, args.calls)
                rows.append((args.ranks, size, "graph", median, spread))
                line += f", in a CUDA graph {median:.1f} us"
                del graph
            except Exception as error:  # noqa: BLE001 - report and go on with eager only
                graph_ok = False
                if rank == 0:
                    print(f"measure_allreduce.py: NCCL could not be captured in a CUDA graph ({error}); "
                          "eager only", file=sys.stderr)
        if graph_ok and size % (2 * args.hidden) == 0:  # in a stream of work: a GEMM makes the buffer
            try:
                tokens = size // (2 * args.hidden)
                x = torch.randn(tokens, args.hidden, dtype=torch.bfloat16, device="cuda")
                w = torch.randn(args.hidden, args.hidden, dtype=torch.bfloat16, device="cuda") * 0.02
                out = buffer.view(tokens, args.hidden)
                with_reduce, gemms_only = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
                torch.matmul(x, w, out=out)
                with torch.cuda.graph(with_reduce):
                    for _ in range(args.calls):
                        torch.matmul(x, w, out=out)
                        dist.all_reduce(out)
                with torch.cuda.graph(gemms_only):
                    for _ in range(args.calls):
                        torch.matmul(x, w, out=out)
                both, spread = timed(with_reduce.replay, args.calls)
                alone, _ = timed(gemms_only.replay, args.calls)
                if both > alone:  # a difference of two timings: kept only where it is positive
                    rows.append((args.ranks, size, "stream", both - alone, spread * both / (both - alone)))
                    line += f", after a {tokens}x{args.hidden}x{args.hidden} GEMM {both - alone:.1f} us"
                del with_reduce, gemms_only, x, w
            except Exception as error:  # noqa: BLE001 - the other modes stand without it
                if rank == 0:
                    print(f"measure_allreduce.py: the stream timing failed at {size} bytes ({error})", file=sys.stderr)
        if rank == 0:
            print(line, file=sys.stderr, flush=True)
    if rank == 0:
        with open(args.out, "w") as f:
            f.write("ranks,bytes,mode,measured_us,spread\n")
            for r in rows:
                f.write(f"{r[0]},{r[1]},{r[2]},{r[3]:.2f},{r[4]:.4f}\n")
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--ranks", type=int, default=0, help="GPUs to use (default: all)")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--calls", type=int, default=20, help="all-reduces per CUDA graph")
    parser.add_argument("--hidden", type=int, default=4096, help="the GEMM's width in stream mode")
    args = parser.parse_args()
    import torch
    import torch.multiprocessing as mp
    if args.ranks == 0:
        args.ranks = torch.cuda.device_count()
    if args.ranks < 2:
        sys.exit("measure_allreduce.py: error: needs at least 2 GPUs, found " + str(torch.cuda.device_count()))
    mp.spawn(worker, args=(args,), nprocs=args.ranks)


if __name__ == "__main__":
    main()
