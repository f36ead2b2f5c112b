#!/usr/bin/env python3
"""Attention kernels to predict with two builds, one kernel string a line: a change to attention's
demand made for speed must leave every prediction as it was, to the last bit.

    python3 benchmarks/attention_kernels.py [--eval-report eval.csv]... [--random N] [--seed S] > K.txt
    build/pipeweave predict --gpu data/gpus/H100-SXM.calibrated.json --json --kernels K.txt > after.json
    (the same with the build before)  ;  cmp before.json after.json

--eval-report takes `pipeweave eval --report DIR`'s eval.csv (its attention rows: the measured
kernels); --random adds N batches drawn at random (decode and prefill, 1-300 sequences, runs of
equal lengths, FlashAttention-2 and -3, paged or not, head dims 64-256), the shapes a serving run's
iterations make, beside those no engine ran.
"""
import argparse
import csv
import random


def random_batch(rng):
    decode = rng.random() < 0.5
    kv_heads = rng.choice([1, 2, 4, 8, 16])
    heads = kv_heads * rng.randint(1, 8)
    head_dim = rng.choice([64, 128, 128, 256])
    causal = int(rng.random() < 0.75)
    page_size = rng.choice([0, 1, 16])
    sequences = rng.randint(1, 300)
    q_lens, kv_lens = [], []
    while len(q_lens) < sequences:
        q = 1 if decode else rng.randint(1, 8000 if rng.random() < 0.25 else 600)
        kv = q + rng.randrange(60000 if rng.random() < 0.33 else 3000)
        repeat = rng.randint(1, 6) if rng.random() < 0.33 else 1
        for _ in range(min(repeat, sequences - len(q_lens))):
            q_lens.append(q)
            kv_lens.append(kv)
    impl = rng.choice(["", ",impl=flash2", ",impl=flash3"])
    return (f"attention:q_lens={'/'.join(map(str, q_lens))},kv_lens={'/'.join(map(str, kv_lens))},heads={heads},"
            f"kv_heads={kv_heads},head_dim={head_dim},causal={causal},page_size={page_size}{impl}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--eval-report", action="append", default=[], help="an eval.csv whose attention rows to include")
    parser.add_argument("--random", type=int, default=4000, help="random batches to add (default 4000)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    for path in args.eval_report:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if row["family"] == "attention":
                    print(row["kernel"])
    rng = random.Random(args.seed)
    for _ in range(args.random):
        print(random_batch(rng))


if __name__ == "__main__":
    main()
