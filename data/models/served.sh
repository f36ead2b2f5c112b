#!/usr/bin/env bash
# GEMMs as served, on model families held out (docs/experiments/served-gemms.md):
#   bash data/models/served.sh [BUILD_DIR]
# 1. Splits the served H100 measurements (data/measurements/H100-SXM/gemm_served_*.csv.gz) by
#    family: ten families (split_served.py's HELD_OUT) and a fifth of the random shapes held out.
# 2. Scores the bundled models on the held-out rows from the shape alone (--without-configs: the
#    library picks the config), and the bundled GEMM model given the config cuBLAS ran.
# 3. Trains networks for GEMMs without a config on the other families' served rows, one per data
#    type (--dtypes: the features carry none), the bundled GEMM model choosing the configs as
#    train_all.sh trains the bundled one, and scores them together on the held-out rows:
#    data/models/served/gemm_configless_served_{bf16,fp8}.json, not bundled (nor kept in the tree:
#    its size; served_h200.sh reads them).
# 4. Trains a GEMM model given the config that ran on the same rows (with their config; the rows
#    whose tile nothing says left out) and scores it on the held-out rows with cuBLAS's config, and
#    from the shape alone as its own chooser (that model is not kept: the tree's size).
# Writes data/models/report/served/: each eval's output, per-family tables (<name>.families.csv)
# and the training logs. About 30 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
cli="${1:-build}/pipeweave"
out=data/models/report/served
gpu=H100-SXM
mkdir -p data/models/served
source data/models/served_split.sh
# the networks bundled until 2026-11-26, trained on rested rows (the bundled ones now learnt from
# every served row, these held-out ones included)
score bundled_without_configs --without-configs --model data/models/rested/gemm_configless_bf16.json \
  --model data/models/rested/gemm_configless_fp8.json
score bundled_with_cublas_config
source data/models/served_train.sh
train_served "data/models/served/gemm_configless_served_{dtype}.json" "$out" bf16 fp8 --data "$split/train.csv"
score served_without_configs --model data/models/served/gemm_configless_served_bf16.json \
  --model data/models/served/gemm_configless_served_fp8.json
grep -v ",unknown," "$split/train.csv" > "$split/train_configs.csv"
"$cli" train --op gemm --data "$split/train_configs.csv" --specs data/gpus --epochs 80 --patience 80 --lr 3e-3 --batch 512 \
  --out "$split/gemm_served.json" 2> "$out/gemm_served.train.log"
score served_with_cublas_config --model "$split/gemm_served.json"
score served_gemm_without_configs --model "$split/gemm_served.json" --without-configs
