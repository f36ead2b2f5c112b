#!/usr/bin/env bash
# Do the same GEMMs time differently inside a short collection (seconds, as small a set as the issue's
# scoring set) and inside a long one (minutes, as the training draws were taken)? On one board, in
# one device call (docs/experiments/served-gemms.md, "Short and long collections on one board"):
#
#   [SHORT_SEED=13] [LONG_SEED=14] bash cuda_kernels/collect_served_short_long.sh OUT_DIR
#
# 1. OUT_DIR/short1: collect_served.sh of a short draw (PER_LAYER=1, RANDOM_SHAPES=100, seed SHORT_SEED).
# 2. OUT_DIR/long: the short draw's shapes among a long draw's (PER_LAYER=16, RANDOM_SHAPES=4000, seed
#    LONG_SEED; collect_served.sh SHAPES=, BF16_S=150 FP8_S=120 as the training draws; the collector
#    shuffles the list, so the short draw's shapes are spread through the run).
# 3. OUT_DIR/short2: the short draw's shapes again, alone.
# nvidia-smi's temperature, SM clock and power after each step: OUT_DIR/state.csv. Then, here:
# served_to_measurements.py of each run and served_shift.py of long and short2 against short1.
set -euo pipefail
out=${1:?usage: collect_served_short_long.sh OUT_DIR}
mkdir -p "$out"
out=$(realpath "$out")
cd "$(dirname "$0")/.."
state() {
  echo "$1,$(nvidia-smi --query-gpu=temperature.gpu,clocks.sm,power.draw --format=csv,noheader,nounits | head -1)" >> "$out/state.csv"
}
echo "step,temperature_c,sm_clock_mhz,power_w" > "$out/state.csv"
state start
SEED=${SHORT_SEED:-13} PER_LAYER=1 RANDOM_SHAPES=100 BF16_S=100 FP8_S=100 TORCH_COUNT=0 bash cuda_kernels/collect_served.sh "$out/short1"
state short1_done
python3 cuda_kernels/served_gemm_shapes.py --out "$out/long_draw.csv" --per-layer 16 --random 4000 --seed "${LONG_SEED:-14}"
{ cat "$out/short1/shapes.csv"; tail -n +2 "$out/long_draw.csv"; } > "$out/long_shapes.csv"
SKIP_BUILD=1 SHAPES="$out/long_shapes.csv" BF16_S=150 FP8_S=120 TORCH_COUNT=0 bash cuda_kernels/collect_served.sh "$out/long"
state long_done
SKIP_BUILD=1 SHAPES="$out/short1/shapes.csv" BF16_S=100 FP8_S=100 TORCH_COUNT=0 bash cuda_kernels/collect_served.sh "$out/short2"
state short2_done
cat "$out/state.csv"
