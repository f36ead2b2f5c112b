#!/usr/bin/env python3
"""Copies a fused-MoE measurement file keeping the rows of at least MIN tokens:

    python3 data/models/rows_with_tokens.py IN.csv.gz OUT.csv.gz MIN

Used for expert-parallel rows in training: below a few tokens, whether a rank's experts are touched
at all is the routing's draw, which nothing in a row's input tells (one token's six picks miss a
given rank of eight 43% of the time), so those rows teach a network noise.
"""
import csv
import gzip
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    source, target, least = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with gzip.open(source, "rt", newline="") as f, gzip.open(target, "wt", newline="") as out:
        rows = csv.DictReader(f)
        writer = csv.DictWriter(out, rows.fieldnames)
        writer.writeheader()
        writer.writerows(r for r in rows if int(r["tokens"]) >= least)


if __name__ == "__main__":
    main()
