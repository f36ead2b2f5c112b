#!/usr/bin/env bash
# The long GEMMs of a GPU's committed served rows, measured again as collect_served.sh measures
# them, on the GPU in hand: does this board run compute-bound GEMMs as the training sessions' did?
# (A fresh draw's repeats are its token counts the earlier draws hit again: small m only.)
#
#   [GPU=H200-SXM] [COUNT=3000] [MIN_US=30] [SEED=1] bash cuda_kernels/collect_served_again.sh OUT_DIR
#
# 1. COUNT shapes a type drawn (SEED) from data/measurements/$GPU/gemm_served_{bf16,fp8}.csv.gz's
#    rows that took at least MIN_US us there, shuffled -> OUT_DIR/shapes.csv (collect_served.sh's
#    columns), and nvidia-smi's name for the board -> OUT_DIR/device.txt.
# 2. cuBLAS's first choice for each (pipeweave-collect --algos 1 --l2 served: back to back over
#    copies of the weights; REPS after WARMUP) -> OUT_DIR/served_{bf16,fp8}.jsonl.gz.
# Then, here: every row is a repeat of the committed file's shape:
#   python3 cuda_kernels/served_to_measurements.py --out-dir DIR --name NAME --exclude FILE_bf16 --exclude FILE_fp8 OUT_DIR
#   python3 data/models/served_shift.py DIR/NAME_repeats_{bf16,fp8}.csv.gz FILE_bf16 FILE_fp8
# Environment (default): GPU (H200-SXM), COUNT (3000), MIN_US (30), SEED (1), REPS (5), WARMUP (2),
# BUILD (build; SKIP_BUILD=1 uses it as it is).
set -euo pipefail
out=${1:?usage: collect_served_again.sh OUT_DIR}
mkdir -p "$out"
out=$(realpath "$out")
cd "$(dirname "$0")/.."
build=${BUILD:-build}
gpu=${GPU:-H200-SXM}
say() { echo "$*" | tee -a "$out/collect.txt"; }
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm,power.limit --format=csv > "$out/device.txt"
python3 - "$gpu" "${COUNT:-3000}" "${MIN_US:-30}" "${SEED:-1}" "$out/shapes.csv" <<'EOF'
import csv, gzip, random, sys
gpu, count, min_us, seed, path = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
rng = random.Random(seed)
picked = []
for dtype in ("bf16", "fp8"):
    with gzip.open(f"data/measurements/{gpu}/gemm_served_{dtype}.csv.gz", "rt", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["is_default"] == "1" and float(r["duration_us"]) >= min_us]
    rows = rng.sample(rows, min(count, len(rows)))
    picked += [(dtype, r["m"], r["n"], r["k"], r["family"], r["tp"], r["layer"]) for r in rows]
rng.shuffle(picked)
with open(path, "w", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(("dtype", "m", "n", "k", "family", "tp", "layer"))
    writer.writerows(picked)
print(f"{len(picked)} shapes of {gpu}'s served rows from {min_us:g} us -> {path}")
EOF
source cuda_kernels/build_tools.sh
build_unless_skipped "$build" "$out" pipeweave_collect
for dtype in bf16 fp8; do
  list="$out/shapes-$dtype.csv"
  { head -1 "$out/shapes.csv"; grep "^$dtype" "$out/shapes.csv" || true; } > "$list"
  start=$SECONDS
  "$build/pipeweave-collect" --op gemm --shapes "$list" --algos 1 --l2 served --reps "${REPS:-5}" --warmup "${WARMUP:-2}" \
    --out "/tmp/again_$dtype.jsonl" 2> "$out/served_$dtype.log"
  gzip -c "/tmp/again_$dtype.jsonl" > "$out/served_$dtype.jsonl.gz"
  say "$dtype: $(($(wc -l < "/tmp/again_$dtype.jsonl") - 1)) of $(($(wc -l < "$list") - 1)) shapes in $((SECONDS - start)) s"
done
