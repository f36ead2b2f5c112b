#!/usr/bin/env bash
# Does a GPU that has just run heavy work time the served GEMMs slower than when it starts cool?
# One short served draw, then the same shapes after a minute of dense bf16 GEMMs, then after a
# minute idle, in one device call (docs/experiments/served-gemms.md, "A short draw, cool and warm"):
#
#   [SEED=12] [HEAT_S=60] [REST_S=60] bash cuda_kernels/collect_served_warm.sh OUT_DIR
#
# 1. OUT_DIR/cool: collect_served.sh of a short draw (PER_LAYER=1, RANDOM_SHAPES=100: 980 shapes a
#    type, seconds of GPU time, as small a set as the issue's scoring set), the GPU as it came.
# 2. HEAT_S seconds of back-to-back 8192^3 bf16 matmuls (PyTorch), then OUT_DIR/warm: the same shapes
#    (collect_served.sh SHAPES=OUT_DIR/cool/shapes.csv), nvidia-smi's temperature and SM clock before
#    and after each step in OUT_DIR/state.csv.
# 3. REST_S seconds idle, then OUT_DIR/rested: the same shapes again.
# Then, here, each run through served_to_measurements.py (--name cool, warm, rested) and
# data/models/served_shift.py of warm and rested against cool.
set -euo pipefail
out=${1:?usage: collect_served_warm.sh OUT_DIR}
mkdir -p "$out"
out=$(realpath "$out")
cd "$(dirname "$0")/.."
state() {
  echo "$1,$(nvidia-smi --query-gpu=temperature.gpu,clocks.sm,power.draw --format=csv,noheader,nounits | head -1)" >> "$out/state.csv"
}
echo "step,temperature_c,sm_clock_mhz,power_w" > "$out/state.csv"
state start
SEED=${SEED:-12} PER_LAYER=1 RANDOM_SHAPES=100 BF16_S=100 FP8_S=100 TORCH_COUNT=0 bash cuda_kernels/collect_served.sh "$out/cool"
state cool_done
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
state heated
SKIP_BUILD=1 SHAPES="$out/cool/shapes.csv" BF16_S=100 FP8_S=100 TORCH_COUNT=0 bash cuda_kernels/collect_served.sh "$out/warm"
state warm_done
sleep "${REST_S:-60}"
state rested
SKIP_BUILD=1 SHAPES="$out/cool/shapes.csv" BF16_S=100 FP8_S=100 TORCH_COUNT=0 bash cuda_kernels/collect_served.sh "$out/rested"
state rested_done
cat "$out/state.csv"
