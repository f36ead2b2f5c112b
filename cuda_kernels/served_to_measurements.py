#!/usr/bin/env python3
"""Turns collect_served.sh runs into the served-GEMM measurement files, one per data type:

    python3 cuda_kernels/served_to_measurements.py --cli build/pipeweave --out-dir DIR RUN_DIR [RUN_DIR ...]

Each RUN_DIR is one collect_served.sh output (served_{bf16,fp8}.jsonl.gz and shapes.csv or
shapes.csv.gz), given in seed order. Each run's raw records become rows through
`pipeweave collect --from-raw`; each row gains the columns family, tp and layer of its shape in that
run's shapes.csv, and shape_seed, the run's place in the list (1, 2, ...). A shape measured by two
runs keeps the first run's row. --first-seed N (default 1): the first run's shape_seed. Writes DIR/gemm_served_{bf16,fp8}.csv.gz (--name NAME:
DIR/NAME_{bf16,fp8}.csv.gz). --keep-share N keeps one shape in N (by a hash of dtype,m,n,k). --exclude FILE.csv.gz (repeatable) drops the shapes (dtype, m, n, k)
that FILE already holds: a later seed's run kept apart as shapes no model was trained on; those
rows go to DIR/NAME_repeats_{bf16,fp8}.csv.gz (data/models/served_shift.py compares them with FILE's).
"""
import argparse
import csv
import gzip
import io
import os
import subprocess
import sys
import tempfile
import zlib


def open_text(path):
    return gzip.open(path, "rt", newline="") if path.endswith(".gz") else open(path, newline="")


def shape_columns(run_dir):
    path = os.path.join(run_dir, "shapes.csv.gz")
    if not os.path.exists(path):
        path = os.path.join(run_dir, "shapes.csv")
    with open_text(path) as f:
        return {(r["dtype"], r["m"], r["n"], r["k"]): (r["family"], r["tp"], r["layer"]) for r in csv.DictReader(f)}


def run_rows(cli, run_dir, dtype):
    return raw_rows(cli, os.path.join(run_dir, f"served_{dtype}.jsonl.gz"))


def raw_rows(cli, raw):
    """A gzip-compressed file of raw records as measurement rows (`pipeweave collect --from-raw`):
    the header and the rows."""
    with tempfile.TemporaryDirectory() as work:
        plain, rows = os.path.join(work, "raw.jsonl"), os.path.join(work, "rows.csv")
        with gzip.open(raw, "rb") as src, open(plain, "wb") as dst:
            dst.write(src.read())
        subprocess.run([cli, "collect", "--from-raw", plain, "--out", rows], check=True, stdout=subprocess.DEVNULL)
        with open(rows, newline="") as f:
            reader = csv.reader(f)
            return next(reader), list(reader)


def write(path, header, rows):
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(header + ["family", "tp", "layer", "shape_seed"])
    writer.writerows(rows)
    with gzip.GzipFile(path, "wb", compresslevel=9, mtime=0) as f:
        f.write(text.getvalue().encode())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", default="build/pipeweave")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--name", default="gemm_served")
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--exclude", action="append", default=[])
    # (a large fresh draw kept as a fixed share of its shapes, where the whole would not fit the tree)
    parser.add_argument("--keep-share", type=int, default=1, metavar="N",
                        help="keep one shape in N (those whose dtype,m,n,k hash to 0 mod N, the same on any machine); 1: all")
    parser.add_argument("runs", nargs="+")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    excluded = set()
    for path in args.exclude:
        with open_text(path) as f:
            excluded |= {(r["dtype"], r["m"], r["n"], r["k"]) for r in csv.DictReader(f)}
    for dtype in ("bf16", "fp8"):
        header, kept, seen, repeats, again = None, [], set(), 0, []
        for seed, run_dir in enumerate(args.runs, start=args.first_seed):
            columns = shape_columns(run_dir)
            run_header, rows = run_rows(args.cli, run_dir, dtype)
            header = header or run_header
            if run_header != header:
                sys.exit(f"served_to_measurements: {run_dir}: the rows' columns differ from the first run's")
            at = {name: i for i, name in enumerate(header)}
            for row in rows:
                key = (row[at["dtype"]], row[at["m"]], row[at["n"]], row[at["k"]])
                if args.keep_share > 1 and zlib.crc32(",".join(key).encode()) % args.keep_share != 0:
                    continue
                if key in seen or key in excluded:
                    repeats += 1
                    if key in excluded and key not in seen:
                        seen.add(key)
                        again.append(row + list(columns.get(key, ("", "", ""))) + [str(seed)])
                    continue
                seen.add(key)
                family = columns.get(key)
                if family is None:
                    sys.exit(f"served_to_measurements: {run_dir}: {key} is not in the run's shapes.csv")
                kept.append(row + list(family) + [str(seed)])
        path = os.path.join(args.out_dir, f"{args.name}_{dtype}.csv.gz")
        write(path, header, kept)
        if args.exclude:
            write(os.path.join(args.out_dir, f"{args.name}_repeats_{dtype}.csv.gz"), header, again)
        print(f"{path}: {len(kept)} rows ({repeats} repeats of an earlier run's or an excluded file's shape dropped)")


if __name__ == "__main__":
    main()
