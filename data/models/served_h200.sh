#!/usr/bin/env bash
# GEMMs as served on the H200, on the model families held out (docs/experiments/served-gemms.md, "The H200"):
#   bash data/models/served_h200.sh [BUILD_DIR]
# Splits the H200's served rows as served.sh splits the H100's (split_served.py: the same ten
# families and fifth of the random shapes held out), and scores on the held-out rows, from the
# shape alone: the bundled models, and the networks for GEMMs without a config that served.sh
# trained on the H100's served rows of the other families (data/models/served/, a GPU they never
# saw; served.sh writes them there, and they are not kept in the tree: run it first). Writes data/models/report/served/h200/. A few minutes on one core.
set -euo pipefail
cd "$(dirname "$0")/../.."
cli="${1:-build}/pipeweave"
out=data/models/report/served/h200
gpu=H200-SXM
source data/models/served_split.sh
# the networks bundled until 2026-11-26, trained on rested rows (the bundled ones now learnt from
# every served row, these held-out ones included)
score bundled_without_configs --without-configs --model data/models/rested/gemm_configless_bf16.json \
  --model data/models/rested/gemm_configless_fp8.json
score served_h100_without_configs --model data/models/served/gemm_configless_served_bf16.json \
  --model data/models/served/gemm_configless_served_fp8.json
