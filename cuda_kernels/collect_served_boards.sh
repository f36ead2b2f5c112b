#!/usr/bin/env bash
# What moves a served GEMM's time on one board, in one device call (docs/experiments/served-gemms.md,
# "Four more boards, short draws and long, warm and cool"):
#
#   [SEED=12] [HEAT_S=60] [REST_S=60] bash cuda_kernels/collect_served_boards.sh warm OUT_DIR
#   [SHORT_SEED=13] [LONG_SEED=14] bash cuda_kernels/collect_served_boards.sh short_long OUT_DIR
#
# Both start with a short draw (collect_served.sh with PER_LAYER=1, RANDOM_SHAPES=100: 980 shapes a
# type, seconds of GPU time, as small a set as the issue's scoring set), then time its shapes again:
# - warm: OUT_DIR/cool (the GPU as it came); HEAT_S seconds of back-to-back 8192^3 bf16 matmuls
#   (PyTorch), then OUT_DIR/warm; REST_S seconds idle, then OUT_DIR/rested.
# - short_long: OUT_DIR/short1; then OUT_DIR/long, the short draw's shapes among a long draw's
#   (PER_LAYER=16, RANDOM_SHAPES=4000, seed LONG_SEED, BF16_S=150 FP8_S=120 as the training draws;
#   pipeweave-collect times a list in its order, so the short draw's shapes, first in the list, are
#   timed in the long run's first seconds); then OUT_DIR/short2, the short draw's shapes alone again.
# nvidia-smi's temperature, SM clock and power after each step: OUT_DIR/state.csv. Then, here:
# served_to_measurements.py of the first run (--name cool or short1) and of the others (--exclude the
# first's two files: every row a repeat), served_shift.py of each repeats file against the first's.
set -euo pipefail
experiment=${1:?usage: collect_served_boards.sh warm|short_long OUT_DIR}
out=${2:?usage: collect_served_boards.sh warm|short_long OUT_DIR}
[[ $experiment == warm || $experiment == short_long ]] || { echo "collect_served_boards.sh: warm or short_long, not $experiment" >&2; exit 2; }
mkdir -p "$out"
out=$(realpath "$out")
cd "$(dirname "$0")/.."
source cuda_kernels/build_tools.sh
rm -f "$out/state.csv"
gpu_state "$out" start
first=$([[ $experiment == warm ]] && echo cool || echo short1)
seed=$([[ $experiment == warm ]] && echo "${SEED:-12}" || echo "${SHORT_SEED:-13}")
SEED=$seed PER_LAYER=1 RANDOM_SHAPES=100 BF16_S=100 FP8_S=100 TORCH_COUNT=0 bash cuda_kernels/collect_served.sh "$out/$first"
gpu_state "$out" "${first}_done"
again() {  # the short draw's shapes (or FILE's), timed again into OUT_DIR/$1
  SKIP_BUILD=1 SHAPES="${2:-$out/$first/shapes.csv}" BF16_S=${3:-100} FP8_S=${4:-100} TORCH_COUNT=0 \
    bash cuda_kernels/collect_served.sh "$out/$1"
  gpu_state "$out" "$1_done"
}
if [[ $experiment == warm ]]; then
  python3 - "${HEAT_S:-60}" <<'PY'
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for _ in range(20):
        c = a @ b
    torch.cuda.synchronize()
PY
  gpu_state "$out" heated
  again warm
  sleep "${REST_S:-60}"
  gpu_state "$out" rested
  again rested
else
  python3 cuda_kernels/served_gemm_shapes.py --out "$out/long_draw.csv" --per-layer 16 --random 4000 --seed "${LONG_SEED:-14}"
  { cat "$out/$first/shapes.csv"; tail -n +2 "$out/long_draw.csv"; } > "$out/long_shapes.csv"
  again long "$out/long_shapes.csv" 150 120
  again short2
fi
cat "$out/state.csv"
