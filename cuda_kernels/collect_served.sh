#!/usr/bin/env bash
# GEMMs as a serving engine runs them, on the GPU in hand, in one device call:
#
#   bash cuda_kernels/collect_served.sh OUT_DIR
#
# 1. The shape list (cuda_kernels/served_gemm_shapes.py: the layers of 42 public model families at
#    TP 1-8 and random shapes; PER_LAYER and RANDOM set its size, SEED its draw) -> OUT_DIR/shapes.csv
# 2. cuBLAS's first choice for each shape (pipeweave-collect --algos 1 --l2 served: back to back,
#    each call on another copy of the weights, no flush, no rest; REPS after WARMUP), bf16 then
#    fp8, each for at most BF16_S / FP8_S seconds (the list is shuffled: what is measured in time
#    is a random subset) -> OUT_DIR/served_{bf16,fp8}.jsonl.gz, raw records for
#    pipeweave collect --from-raw
# 3. A sample (TORCH_COUNT shapes) through PyTorch's own calls (collect_torch_linear.py:
#    F.linear, torch._scaled_mm) the same way, drawn from the first 2000 shapes of each dtype's
#    list (measured in step 2 however soon its budget ends) -> OUT_DIR/torch_linear.csv
# Environment (default): PER_LAYER (16), RANDOM_SHAPES (4000), SEED (1), REPS (5), WARMUP (2),
# BF16_S (230), FP8_S (190), TORCH_COUNT (300), BUILD (build; SKIP_BUILD=1 uses it as it is);
# SHAPES=FILE: measure FILE's shapes (step 1's columns, in its order) instead of drawing a list
# (collect_served_again.sh).
set -euo pipefail
out=${1:?usage: collect_served.sh OUT_DIR}
mkdir -p "$out"
out=$(realpath "$out")
shapes=${SHAPES:+$(realpath "$SHAPES")}  # (resolved before the cd below)
cd "$(dirname "$0")/.."
build=${BUILD:-build}
say() { echo "$*" | tee -a "$out/collect.txt"; }
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm,power.limit --format=csv > "$out/device.txt"
if [[ -n $shapes ]]; then
  [[ $shapes == "$out/shapes.csv" ]] || cp "$shapes" "$out/shapes.csv"
else
  python3 cuda_kernels/served_gemm_shapes.py --out "$out/shapes.csv" --per-layer "${PER_LAYER:-16}" \
    --random "${RANDOM_SHAPES:-4000}" --seed "${SEED:-1}" | tee -a "$out/collect.txt"
fi
source cuda_kernels/build_tools.sh
build_unless_skipped "$build" "$out" pipeweave_collect
for dtype in bf16 fp8; do
  list="$out/shapes-$dtype.csv"
  { head -1 "$out/shapes.csv"; grep "^$dtype" "$out/shapes.csv" || true; } > "$list"
  seconds=${BF16_S:-230}
  [[ $dtype == fp8 ]] && seconds=${FP8_S:-190}
  start=$SECONDS
  # timeout ends the collection at its budget; the records written until then are whole lines
  timeout "$seconds" "$build/pipeweave-collect" --op gemm --shapes "$list" --algos 1 --l2 served --reps "${REPS:-5}" \
    --warmup "${WARMUP:-2}" --out "/tmp/served_$dtype.jsonl" 2> "$out/served_$dtype.log" || true
  gzip -c "/tmp/served_$dtype.jsonl" > "$out/served_$dtype.jsonl.gz"
  say "$dtype: $(($(wc -l < "/tmp/served_$dtype.jsonl") - 1)) of $(($(wc -l < "$list") - 1)) shapes in $((SECONDS - start)) s"
done
start=$SECONDS
{ head -2001 "$out/shapes-bf16.csv"; sed -n 2,2001p "$out/shapes-fp8.csv"; } > "$out/shapes-torch.csv"
python3 cuda_kernels/collect_torch_linear.py --shapes "$out/shapes-torch.csv" --out "$out/torch_linear.csv" \
  --count "${TORCH_COUNT:-300}" --reps "${REPS:-5}" --warmup "${WARMUP:-2}" 2> "$out/torch_linear.log" ||
  tail -5 "$out/torch_linear.log"
say "torch linear: $(($(wc -l < "$out/torch_linear.csv") - 1)) shapes in $((SECONDS - start)) s"
