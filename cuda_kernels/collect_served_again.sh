#!/usr/bin/env bash
# The shapes of a GPU's committed served rows, measured again as collect_served.sh measures them, on
# the GPU in hand: does this board run compute-bound GEMMs as the training sessions' did? (A fresh
# draw's repeats are the token counts the earlier draws hit again: mostly at small m.)
#
#   [GPU=H200-SXM] [COUNT=3000] [MIN_US=30] [SEED=1] bash cuda_kernels/collect_served_again.sh OUT_DIR
#
# 1. COUNT shapes a type drawn (SEED) from data/measurements/$GPU/gemm_served_{bf16,fp8}.csv.gz's
#    rows that took at least MIN_US us there (MIN_US=0: the training runs' own mix of short and long),
#    shuffled -> OUT_DIR/shapes.csv.
# 2. collect_served.sh with SHAPES=OUT_DIR/shapes.csv (no PyTorch sample; BF16_S and FP8_S 600 unless
#    set): cuBLAS's first choice for each, back to back over copies of the weights ->
#    OUT_DIR/served_{bf16,fp8}.jsonl.gz, and nvidia-smi's name for the board -> OUT_DIR/device.txt.
# Then, here: every row is a repeat of the committed file's shape:
#   python3 cuda_kernels/served_to_measurements.py --out-dir DIR --name NAME --exclude FILE_bf16 --exclude FILE_fp8 OUT_DIR
#   python3 data/models/served_shift.py --quarters DIR/NAME_repeats_{bf16,fp8}.csv.gz FILE_bf16 FILE_fp8
# Environment (default): GPU (H200-SXM), COUNT (3000), MIN_US (30), SEED (1), and collect_served.sh's
# REPS, WARMUP, BUILD, SKIP_BUILD.
set -euo pipefail
out=${1:?usage: collect_served_again.sh OUT_DIR}
mkdir -p "$out"
out=$(realpath "$out")
cd "$(dirname "$0")/.."
python3 - "${GPU:-H200-SXM}" "${COUNT:-3000}" "${MIN_US:-30}" "${SEED:-1}" "$out/shapes.csv" <<'PY'
import csv, gzip, random, sys
gpu, count, min_us, seed, path = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
rng = random.Random(seed)
picked = []
for dtype in ("bf16", "fp8"):
    with gzip.open(f"data/measurements/{gpu}/gemm_served_{dtype}.csv.gz", "rt", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["is_default"] == "1" and float(r["duration_us"]) >= min_us]
    rows = rng.sample(rows, min(count, len(rows)))
    picked += [(r["dtype"], r["m"], r["n"], r["k"], r["family"], r["tp"], r["layer"]) for r in rows]  # (fp8: fp8_e4m3)
rng.shuffle(picked)
with open(path, "w", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(("dtype", "m", "n", "k", "family", "tp", "layer"))
    writer.writerows(picked)
print(f"{len(picked)} shapes of {gpu}'s served rows from {min_us:g} us -> {path}")
PY
SHAPES="$out/shapes.csv" TORCH_COUNT=0 BF16_S=${BF16_S:-600} FP8_S=${FP8_S:-600} bash cuda_kernels/collect_served.sh "$out"
