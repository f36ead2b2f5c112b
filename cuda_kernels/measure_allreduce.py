#!/usr/bin/env python3
"""Measures NCCL all-reduce on the GPUs of one host, to check the collective model against.

  measure_allreduce.py --out allreduce.csv [--ranks N] [--reps N]

Spawns one process per GPU (torch.distributed, NCCL), and for bf16 buffers from 4 KiB to
256 MiB times all_reduce (sum) with CUDA events: 5 warm-up calls, then --reps timed ones
back to back, the median per call. Rank 0 writes `ranks,bytes,measured_us,spread` (bytes:
each rank's buffer, as `all_reduce:bytes=...,ranks=...` takes it). Progress goes to stderr.
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
    sizes = [4096 * 4 ** i for i in range(0, 12)]  # 4 KiB .. 16 GiB capped below
    sizes = [s for s in sizes if s <= 256 * 2 ** 20]
    rows = []
    for size in sizes:
        buffer = torch.ones(size // 2, dtype=torch.bfloat16, device="cuda")
        for _ in range(5):
            dist.all_reduce(buffer)
        torch.cuda.synchronize()
        dist.barrier()
        times = []
        for _ in range(args.reps):
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            dist.all_reduce(buffer)
            end.record()
            end.synchronize()
            times.append(begin.elapsed_time(end) * 1000)
        times.sort()
        median = times[len(times) // 2]
        rows.append((args.ranks, size, median, (times[-1] - times[0]) / median))
        if rank == 0:
            print(f"all_reduce {size} bytes x {args.ranks} ranks: {median:.1f} us", file=sys.stderr, flush=True)
    if rank == 0:
        with open(args.out, "w") as f:
            f.write("ranks,bytes,measured_us,spread\n")
            for r in rows:
                f.write(f"{r[0]},{r[1]},{r[2]:.2f},{r[3]:.4f}\n")
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--ranks", type=int, default=0, help="GPUs to use (default: all)")
    parser.add_argument("--reps", type=int, default=20)
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
