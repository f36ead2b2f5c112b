#!/usr/bin/env bash
# Training data from GPUs of other compute:memory balances than the one in hand: for each SM
# count N given, the microbenchmarks (-> a calibrated spec) and the measurements, every kernel
# confined to N of the GPU's SMs (--sms N: a green context, so the same memory system with
# fewer SMs). Run from the repository root on the GPU machine:
#   cuda_kernels/collect_sm_variants.sh OUT_DIR N [N...]
# N is rounded up to the hardware's granularity (multiples of 8 on Hopper: 66 gets 72); the spec
# and the rows are named for the count obtained, e.g. H100-SXM-sm64.
# Environment (default):
#   SHAPES  GEMM shape list (data/shapes/gemm.csv)
#   SUBSET  how many of its shapes, drawn at random with SEED (1500; 0: all)
#   SEED    (1)
#   ALGOS   cuBLASLt candidates per shape (8)
#   REST    idle time after each candidate, as a multiple of its measurement's (2)
#   RUNS    microbenchmark runs per N (1; 3 for a spec as committed in data/gpus)
#   OPS     what to collect (gemm; also rmsnorm and silu_mul, from data/shapes/<op>.csv whole)
#   BUILD   the build folder (build); SKIP_BUILD=1 uses it as it is
# Writes under OUT_DIR: shapes-gemm.csv (the subset); <spec name>.calibrated.json for each N, so
# that `pipeweave train --specs OUT_DIR --data OUT_DIR/sm64/gemm.csv ...` pairs rows and spec;
# and per N a folder smN/ with the microbenchmark logs and report, <op>.csv (pipeweave collect's
# CSV), <op>-raw.jsonl.gz (the raw records, for --from-raw) and <op>-smi.csv.gz (the SM clock
# and power during the collection); console.txt has the timings.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 OUT_DIR N [N...]" >&2; exit 2; }
out=$1; shift
sms_list=("$@")
for n in "${sms_list[@]}"; do [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "$0: N must be a positive whole number, got '$n'" >&2; exit 2; }; done
shapes=${SHAPES:-data/shapes/gemm.csv} subset=${SUBSET:-1500} seed=${SEED:-1} algos=${ALGOS:-8} rest=${REST:-2}
runs=${RUNS:-1} ops=${OPS:-gemm} build=${BUILD:-build}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
console="$out/console.txt"
say() { echo "$*" | tee -a "$console"; }

if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  start=$(date +%s)
  source cuda_kernels/build_tools.sh
  build_tools "$build" "$out/build.log" pipeweave_collect pipeweave_microbench pipeweave_cli
  say "built in $(($(date +%s) - start)) s"
fi
cli="$build/pipeweave"
export PIPEWEAVE_MICROBENCH="$build/pipeweave-microbench" PIPEWEAVE_COLLECT="$build/pipeweave-collect"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$console"

# The GEMM shapes: a seeded random subset, in the list's order.
python3 - "$shapes" "$subset" "$seed" "$out/shapes-gemm.csv" <<'EOF'
import random, sys
source, count, seed, target = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
lines = [l for l in open(source).read().splitlines() if l and not l.startswith('#')]
header, rows = lines[0], lines[1:]
if 0 < count < len(rows):
    rows = [rows[i] for i in sorted(random.Random(seed).sample(range(len(rows)), count))]
open(target, 'w').write('\n'.join([header] + rows) + '\n')
print(f"{len(rows)} GEMM shapes of {source} (seed {seed})")
EOF

spec_name() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["name"])' "$1"; }
for n in "${sms_list[@]}"; do
  dir="$out/sm$n"
  mkdir -p "$dir"
  start=$(date +%s)
  "$cli" calibrate --sms "$n" --runs "$runs" --log-dir "$dir/microbench" --out "$dir/calibrated.json" \
    --report "$dir/calibration" > "$dir/calibration.txt"
  name=$(spec_name "$dir/calibrated.json")
  cp "$dir/calibrated.json" "$out/$name.calibrated.json"
  say "--sms $n: spec $name ($(grep -o '[0-9]* SMs of [0-9]*' "$dir/calibration.txt")), microbenchmarks $(($(date +%s) - start)) s"
  for op in $ops; do
    list="$out/shapes-gemm.csv"
    [[ $op == gemm ]] || list="data/shapes/$op.csv"
    start=$(date +%s)
    "$here/clock_during.sh" "$dir/$op-smi.csv" "$cli" collect --op "$op" --shapes "$list" --sms "$n" --algos "$algos" \
      --rest "$rest" --raw "$dir/$op-raw.jsonl" --out "$dir/$op.csv" 2> "$dir/$op.log"
    rows=$(($(wc -l < "$dir/$op.csv") - 1))
    say "--sms $n: $op $rows rows in $(($(date +%s) - start)) s, gpu $(sed -n 2p "$dir/$op.csv" | cut -d, -f1); $(tail -1 "$dir/$op.log")"
    gzip -9f "$dir/$op-raw.jsonl" "$dir/$op-smi.csv"
  done
done
say "done: $out"
