#!/usr/bin/env python3
"""Splits the served GEMM measurements by model family, as a new user's models would be new:

    python3 data/models/split_served.py OUT_DIR FILE.csv.gz [FILE.csv.gz ...]

Held out: every row of the families in HELD_OUT whose weight shape (n, k) no other family has
(a layer shared with a training family would not be new), and a fifth of the random shapes (by a
hash of m, n and k, so that a shape's bf16 and fp8 rows fall on the same side). Everything else trains. Writes OUT_DIR/train.csv and OUT_DIR/test.csv (the
measurement format, the family columns kept) and prints the counts.
"""
import csv
import gzip
import os
import sys
import zlib

# The families the serving-runs issue measured its GEMMs on (Qwen2.5-72B, Llama-3.1-405B,
# Gemma-2-27B, Mistral-Small-24B, Phi-3-medium, models of 1.5-3B), two mixtures of experts
# (one of them with latent attention) and one more dense model.
HELD_OUT = {"Qwen2.5-72B", "Llama-3.1-405B", "Gemma-2-27B", "Mistral-Small-24B", "Phi-3-medium", "Qwen2.5-1.5B",
            "Llama-3.2-3B", "Qwen3-30B-A3B", "DeepSeek-V2-Lite", "Command-R-35B"}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out_dir, files = sys.argv[1], sys.argv[2:]
    rows, header = [], None
    for path in files:
        with gzip.open(path, "rt", newline="") as f:
            reader = csv.reader(f)
            file_header = next(reader)
            if header and file_header != header:
                sys.exit(f"split_served: {path}: another header than {files[0]}'s")
            header = file_header
            rows += list(reader)
    at = {name: i for i, name in enumerate(header)}
    def random_held_out(r):  # by the shape alone: its bf16 and fp8 rows stay on one side
        return zlib.crc32(",".join(r[at[c]] for c in ("m", "n", "k")).encode()) % 5 == 0

    trained_weights = {(r[at["n"]], r[at["k"]]) for r in rows if r[at["family"]] not in HELD_OUT and
                       not (r[at["family"]] == "random" and random_held_out(r))}

    def held_out(r):
        family = r[at["family"]]
        if family == "random":
            return random_held_out(r)
        return family in HELD_OUT and (r[at["n"]], r[at["k"]]) not in trained_weights

    os.makedirs(out_dir, exist_ok=True)
    counts = {"train": 0, "test": 0, "shared weights, dropped": 0}
    with open(os.path.join(out_dir, "train.csv"), "w", newline="") as train, \
            open(os.path.join(out_dir, "test.csv"), "w", newline="") as test:
        train_writer, test_writer = csv.writer(train), csv.writer(test)
        train_writer.writerow(header)
        test_writer.writerow(header)
        for r in rows:
            if held_out(r):
                test_writer.writerow(r)
                counts["test"] += 1
            elif r[at["family"]] in HELD_OUT:
                counts["shared weights, dropped"] += 1  # a held-out family's layer that a training family shares
            else:
                train_writer.writerow(r)
                counts["train"] += 1
    print(", ".join(f"{v} {k}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
