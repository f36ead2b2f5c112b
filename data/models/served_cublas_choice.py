#!/usr/bin/env python3
"""cuBLAS's choice of kernel from the nearest measured shapes (docs/experiments/served-gemms.md): a
study, not part of the library. Needs numpy and scikit-learn (PyPI).

    served_cublas_choice.py inner-split OUT_DIR TRAIN.csv
        splits a training set as split_served.py splits the whole: eight more families whose
        weight shapes no other family has, and a fifth of the random shapes (another hash)
    served_cublas_choice.py candidates --train CSV [--train CSV ...] --test CSV --k K --out PREFIX
        for each test row, the distinct configs cuBLAS ran on its K nearest training rows of the
        same GPU and data type (by log2 m, n, k): PREFIX_cands.csv (the test row with each config,
        the measurement format) and PREFIX_meta.csv (the row it stands for, the rank of the config's
        nearest row among the K, its rows among them)
    served_cublas_choice.py configs FILE.csv.gz [FILE.csv.gz ...]
        per GPU and data type, how many distinct configs cuBLAS ran and how many cover 99% of the rows
    served_cublas_choice.py score --eval EVAL.csv --meta META.csv --test CSV [--configless EVAL.csv] [--k K]
        EVAL.csv: `pipeweave eval` of PREFIX_cands.csv with a GEMM model given the config. Without
        --configless: MAPE (mean signed error) per data type, model families and random shapes, of
        five rules over the candidates of the nearest 1-32 rows (min: the fastest prediction; top1:
        the nearest row's config; votemean, votegeo: means weighted by rows; minmaj: the fastest of
        the configs at least half as frequent as the most). With --configless (eval of the same test
        rows without configs, in order): that, the fastest of the K nearest rows' configs (rows whose
        strides are not 16-byte aligned keep the configless answer, as the library answers them), and
        their geometric and arithmetic means.
"""
import argparse
import collections
import csv
import math
import os
import sys
import zlib

CONFIG = ["tile_m", "tile_n", "tile_k", "split_k", "stages", "cluster_m", "cluster_n", "swap_ab", "schedule", "raster"]
INNER_HELD_OUT = {"Yi-1.5-34B", "Qwen3-4B", "Gemma-3-12B", "Phi-3-mini", "Mistral-Nemo-12B", "OLMoE-1B-7B", "Qwen2-57B-A14B",
                  "Granite-3.1-8B"}


def read(path):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        return reader.fieldnames, list(reader)


def inner_split(out_dir, path):
    header, rows = read(path)
    def random_held(r):
        return zlib.crc32(("v" + r["m"] + "," + r["n"] + "," + r["k"]).encode()) % 5 == 0
    trained = {(r["n"], r["k"]) for r in rows if r["family"] not in INNER_HELD_OUT and not (r["family"] == "random" and random_held(r))}
    def held(r):
        if r["family"] == "random":
            return random_held(r)
        return r["family"] in INNER_HELD_OUT and (r["n"], r["k"]) not in trained
    os.makedirs(out_dir, exist_ok=True)
    train = [r for r in rows if not held(r) and r["family"] not in INNER_HELD_OUT]
    test = [r for r in rows if held(r)]
    for name, part in (("train.csv", train), ("test.csv", test)):
        with open(os.path.join(out_dir, name), "w", newline="") as f:
            writer = csv.DictWriter(f, header)
            writer.writeheader()
            writer.writerows(part)
    print(f"{len(train)} train, {len(test)} test")


def candidates(args):
    import numpy as np
    from sklearn.neighbors import NearestNeighbors

    def features(rows):
        return np.array([[math.log2(int(r["m"])), math.log2(int(r["n"])), math.log2(int(r["k"]))] for r in rows])
    training = collections.defaultdict(list)
    for path in args.train:
        for r in read(path)[1]:
            if r["config_source"] != "unknown":
                training[(r["gpu"], r["dtype"])].append(r)
    header, test = read(args.test)
    groups = collections.defaultdict(list)
    for i, r in enumerate(test):
        groups[(r["gpu"], r["dtype"])].append(i)
    out_rows, meta = [], []
    for key, indices in groups.items():
        rows = training[key]
        if not rows:
            sys.exit(f"served_cublas_choice: no training row of {key}")
        _, nearest = NearestNeighbors(n_neighbors=args.k).fit(features(rows)).kneighbors(features([test[i] for i in indices]))
        for i, neighbours in zip(indices, nearest):
            first, votes = {}, collections.Counter()
            for rank, j in enumerate(neighbours):
                config = tuple(rows[j][c] for c in CONFIG)
                votes[config] += 1
                first.setdefault(config, rank)
            for config, rank in first.items():
                row = dict(test[i])
                row.update(zip(CONFIG, config))
                row["config_source"] = "kernel_name"
                out_rows.append(row)
                meta.append((i, rank, votes[config]))
    with open(args.out + "_cands.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, header)
        writer.writeheader()
        writer.writerows(out_rows)
    with open(args.out + "_meta.csv", "w") as f:
        f.write("owner,rank,votes\n" + "".join(f"{o},{r},{v}\n" for o, r, v in meta))
    print(f"{len(out_rows)} candidates for {len(test)} rows")


def configs(paths):
    import gzip
    counts = collections.defaultdict(collections.Counter)
    for path in paths:
        with gzip.open(path, "rt", newline="") as f:
            for r in csv.DictReader(f):
                if r["config_source"] != "unknown":
                    counts[(r["gpu"], r["dtype"])][tuple(r[c] for c in CONFIG)] += 1
    print("gpu dtype rows distinct_configs configs_covering_99pct")
    for (gpu, dtype), counter in sorted(counts.items()):
        total, covered, needed = sum(counter.values()), 0, 0
        for _, count in counter.most_common():
            covered += count
            needed += 1
            if covered >= 0.99 * total:
                break
        print(gpu, dtype, total, len(counter), needed)


def summary(ratios):
    return f"{100 * sum(abs(x - 1) for x in ratios) / len(ratios):5.2f}% ({100 * (sum(ratios) / len(ratios) - 1):+.1f})"


def group(r):
    return ("bf16" if r["dtype"] == "bf16" else "fp8", "random" if r["family"] == "random" else "families")


def print_table(results):
    keys = sorted({k for d in results.values() for k in d})
    print("rule".ljust(16) + "".join(f"{a + ' ' + b:>22s}" for a, b in keys))
    for name, d in results.items():
        print(name.ljust(16) + "".join(f"{summary(d[k]):>22s}" for k in keys))


def score(args):
    _, evaluated = read(args.eval)
    _, meta = read(args.meta)
    _, test = read(args.test)
    if len(evaluated) != len(meta):
        sys.exit(f"served_cublas_choice: {args.eval} has {len(evaluated)} rows, {args.meta} {len(meta)}")
    by_row = collections.defaultdict(list)
    for e, m in zip(evaluated, meta):
        by_row[int(m["owner"])].append((int(m["rank"]), int(m["votes"]), float(e["predicted_us"])))
    results = collections.defaultdict(lambda: collections.defaultdict(list))
    if args.configless:
        _, configless = read(args.configless)
        if len(configless) != len(test):
            sys.exit(f"served_cublas_choice: {args.configless} has {len(configless)} rows, {args.test} {len(test)}")
        for i, r in enumerate(test):
            measured, alone = float(r["duration_us"]), float(configless[i]["predicted_us"])
            if abs(float(configless[i]["measured_us"]) - measured) > 1e-3 * measured:
                sys.exit(f"served_cublas_choice: {args.configless} row {i} is not {args.test}'s")
            aligned = int(r["k"]) * (2 if r["dtype"] == "bf16" else 1) % 16 == 0 and int(r["n"]) * 2 % 16 == 0
            fastest = min(p for rank, _, p in by_row[i] if rank < args.k) if aligned else alone
            for name, p in (("configless", alone), (f"min of {args.k}", fastest), ("geometric mean", math.sqrt(alone * fastest)),
                            ("mean", (alone + fastest) / 2)):
                results[name][group(r)].append(p / measured)
        print_table(results)
        return
    for i, r in enumerate(test):
        rows = sorted(by_row[i])
        measured = float(r["duration_us"])
        for k in (1, 2, 4, 8, 16, 32):
            near = [c for c in rows if c[0] < k]
            weight = sum(v for _, v, _ in near)
            most = max(v for _, v, _ in near)
            rules = {"min": min(p for *_, p in near), "top1": near[0][2],
                     "votemean": sum(v * p for _, v, p in near) / weight,
                     "votegeo": math.exp(sum(v * math.log(p) for _, v, p in near) / weight),
                     "minmaj": min(p for _, v, p in near if v >= most / 2)}
            for name, p in rules.items():
                results[f"{name} of {k}"][group(r)].append(p / measured)
    print_table(results)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    split = commands.add_parser("inner-split")
    split.add_argument("out_dir")
    split.add_argument("train")
    cands = commands.add_parser("candidates")
    cands.add_argument("--train", action="append", required=True)
    cands.add_argument("--test", required=True)
    cands.add_argument("--k", type=int, required=True)
    cands.add_argument("--out", required=True)
    listed = commands.add_parser("configs")
    listed.add_argument("files", nargs="+")
    scored = commands.add_parser("score")
    scored.add_argument("--eval", required=True)
    scored.add_argument("--meta", required=True)
    scored.add_argument("--test", required=True)
    scored.add_argument("--configless")
    scored.add_argument("--k", type=int, default=16)
    args = parser.parse_args()
    if args.command == "inner-split":
        inner_split(args.out_dir, args.train)
    elif args.command == "configs":
        configs(args.files)
    elif args.command == "candidates":
        if args.k < 1:
            parser.error("--k must be at least 1")
        candidates(args)
    else:
        score(args)


if __name__ == "__main__":
    main()
