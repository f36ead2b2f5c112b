#!/usr/bin/env bash
# The clock under sustained load against the served protocol, in one device call:
#
#   bash cuda_kernels/served_sustained.sh OUT_DIR
#
# One Llama-3-8B layer's four prefill GEMMs (4096 tokens; data/e2e/<GPU>/sustained_load/
# prefill_gemm_shapes.csv) timed five ways, each under clock_during.sh (SM clock and power):
#   isolated      as the rested collection times them (an L2 flush and a rest before each call)
#   served        as collect_served.sh times them: back to back over copies of the weights, 5 after 2
#   in_context    the same, inside a served collection: the four shapes every 48th of 1,200 served
#                 shapes (served_gemm_shapes.py, seed 5), 25 times each, as the served labels were
#                 taken on a GPU kept busy by the shapes before
#   sustained     2,000 calls back to back after 200 (--l2 warm), as sustained-load.md measured
#   sustained_served  2,000 back to back over copies of the weights (each layer its own weights)
# Raw records (pipeweave collect --from-raw) and nvidia-smi samples in OUT_DIR; the comparison:
#   python3 cuda_kernels/served_sustained.py OUT_DIR
set -euo pipefail
out=${1:?usage: served_sustained.sh OUT_DIR}
mkdir -p "$out"
out=$(realpath "$out")
cd "$(dirname "$0")/.."
build=${BUILD:-build}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$out/device.txt"
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  source cuda_kernels/build_tools.sh
  build_tools "$build" "$out/build.log" pipeweave_collect
fi
collect="$build/pipeweave-collect"
prefill=data/e2e/H100-SXM/sustained_load/prefill_gemm_shapes.csv
cp "$prefill" "$out/prefill_gemm_shapes.csv"
python3 cuda_kernels/served_gemm_shapes.py --out "$out/context_all.csv" --per-layer 16 --random 4000 --seed 5 > /dev/null
python3 - "$out/context_all.csv" "$prefill" "$out/context.csv" <<'EOF'
import sys
context = [",".join(l.split(",")[:4]) for l in open(sys.argv[1]).read().splitlines()[1:] if l.startswith("bf16,")][:1200]
prefill = open(sys.argv[2]).read().splitlines()
rows = [prefill[0]]
for i, line in enumerate(context):
    if i % 48 == 0:
        rows += prefill[1:]
    rows.append(line)
open(sys.argv[3], "w").write("\n".join(rows) + "\n")
EOF
echo "$gpu"
run() {  # name, then pipeweave-collect's arguments
  local name=$1
  shift
  echo "== $name"
  cuda_kernels/clock_during.sh "$out/smi_$name.csv" "$collect" --op gemm --algos 1 --out "$out/$name.jsonl" "$@" \
    2> >(grep -v '^collect' >&2)
}
run isolated --shapes "$prefill"
run served --shapes "$prefill" --l2 served --reps 5 --warmup 2
run in_context --shapes "$out/context.csv" --l2 served --reps 5 --warmup 2
run sustained --shapes "$prefill" --reps 2000 --warmup 200 --l2 warm
run sustained_served --shapes "$prefill" --reps 2000 --warmup 200 --l2 served
gzip -f "$out"/smi_*.csv "$out/in_context.jsonl" "$out/sustained.jsonl" "$out/sustained_served.jsonl"
rm -f "$out/context_all.csv"
