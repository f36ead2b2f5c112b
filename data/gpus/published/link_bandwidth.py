#!/usr/bin/env python3
"""The link bandwidth NCCL all-reduces reach on the published multi-GPU hosts.

Reads the published archive's collective/<GPU>/all_reduce.csv (NCCL all-reduces timed on hosts
of A100, H100, H20, H800, RTX 6000 Ada and RTX PRO 6000; `size` in bytes, times in ms) and, per
GPU and GPU count, the bus bandwidth of the messages of 16 MiB and more (where the per-step
latency is a few percent of the time): the bytes each GPU's link carries in a ring, 2(n-1)/n of
the buffer, over the median time, the median over those sizes. That is the figure a GpuSpec's
link_bandwidth_gb_s stands for (per direction, per GPU).

    python3 data/gpus/published/link_bandwidth.py [ARCHIVE]   (default ../shared/public-data/pipeweave-published.tar.xz)
"""
import csv
import io
import os
import statistics
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
ARCHIVE = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "..", "..", "shared", "public-data",
                                                               "pipeweave-published.tar.xz")
MIN_BYTES = 16 << 20

with tarfile.open(ARCHIVE) as archive:
    members = sorted(m.name for m in archive.getmembers() if m.name.endswith("/all_reduce.csv"))
    print(f"{'GPU':<16} {'GPUs':>4} {'sizes':>5} {'bus GB/s':>9} {'min':>6} {'max':>6}")
    for name in members:
        gpu = name.split("/")[-2]
        rows = list(csv.DictReader(io.TextIOWrapper(archive.extractfile(name))))
        by_count = {}
        for row in rows:
            size, n = int(row["size"]), int(row["num_workers"])
            if size < MIN_BYTES:
                continue
            seconds = float(row["time_stats.all_reduce.median"]) / 1e3
            by_count.setdefault(n, {}).setdefault(size, []).append(2 * (n - 1) / n * size / seconds / 1e9)
        for n, sizes in sorted(by_count.items()):
            per_size = [statistics.median(v) for v in sizes.values()]
            print(f"{gpu:<16} {n:>4} {len(per_size):>5} {statistics.median(per_size):>9.1f} {min(per_size):>6.1f} {max(per_size):>6.1f}")
