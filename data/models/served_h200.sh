#!/usr/bin/env bash
# GEMMs as served on the H200, on the model families held out (docs/experiments/served-gemms.md, "The H200"):
#   bash data/models/served_h200.sh [BUILD_DIR]
# Splits the H200's served rows as served.sh splits the H100's (split_served.py: the same ten
# families and fifth of the random shapes held out), and scores on the held-out rows, from the
# shape alone: the bundled models, and the networks for GEMMs without a config that served.sh
# trained on the H100's served rows of the other families (data/models/served/, a GPU they never
# saw). Writes data/models/report/served/h200/. A few minutes on one core.
set -euo pipefail
cd "$(dirname "$0")/../.."
cli="${1:-build}/pipeweave"
out=data/models/report/served/h200
mkdir -p "$out"
split=$(mktemp -d)
trap 'rm -rf "$split"' EXIT
data=data/measurements/H200-SXM
python3 data/models/split_served.py "$split" "$data/gemm_served_bf16.csv.gz" "$data/gemm_served_fp8.csv.gz" | tee "$out/split.txt"
score() {  # name, then eval's arguments: the eval's output and its per-family table
  local name=$1
  shift
  "$cli" eval "$@" --data "$split/test.csv" --specs data/gpus --report "$split/$name" > "$out/$name.txt"
  python3 data/models/served_report.py "$split/$name/eval.csv" "$split/test.csv" --csv "$out/$name.families.csv" \
    >> "$out/$name.txt"
  cat "$out/$name.txt"
}
score bundled_without_configs --without-configs
score served_h100_without_configs --model data/models/served/gemm_configless_served_bf16.json \
  --model data/models/served/gemm_configless_served_fp8.json
