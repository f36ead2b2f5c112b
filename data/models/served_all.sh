#!/usr/bin/env bash
# Networks for GEMMs without a config trained on every served row of both GPUs, scored on a fresh
# draw of shapes (docs/experiments/served-gemms.md, "A fresh draw"):
#   bash data/models/served_all.sh [BUILD_DIR]
# 1. Trains them as served_both_gpus.sh does (one per data type, the bundled GEMM model choosing
#    the configs, 160 epochs), on all the H100's and the H200's rows of seeds 1-3
#    (gemm_served_{bf16,fp8}.csv.gz, every family), answering as the bundled ones do for fp16 and
#    fp8 e5m2 too.
# 2. Scores them and the bundled models on the seed-4 rows (served_fresh.sh: shapes none of
#    them was trained on) -> data/models/report/served/fresh/{bundled,served_all}/
# 3. Predicts the published serving runs with them in the place of the bundled ones
#    (data/e2e/published/score_runs.py --kernel-model) -> .../served_all/e2e_published.txt
# The networks are not kept (the tree's size). About 12 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
cli="$build/pipeweave"
out=data/models/report/served/fresh
models=$(mktemp -d)
trap 'rm -rf "$models"' EXIT
mkdir -p "$out/served_all"
source data/models/served_train.sh
train_served "$models/configless_{dtype}.json" "$out/served_all" bf16,fp16 fp8_e4m3,fp8_e5m2 \
  --data "data/measurements/H100-SXM/gemm_served_{dtype}.csv.gz" --data "data/measurements/H200-SXM/gemm_served_{dtype}.csv.gz"
trained=(--model "$models/configless_bf16.json" --model "$models/configless_fp8.json")
OUT="$out/bundled" bash data/models/served_fresh.sh "$build"
OUT="$out/served_all" bash data/models/served_fresh.sh "$build" "${trained[@]}"
python3 data/e2e/published/score_runs.py --pipeweave "$cli" -- --kernel-model "$models/configless_bf16.json" \
  --kernel-model "$models/configless_fp8.json" | tee "$out/served_all/e2e_published.txt"
