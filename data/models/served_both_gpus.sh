#!/usr/bin/env bash
# GEMMs as served, on the model families held out, trained on both GPUs (docs/experiments/served-gemms.md):
#   bash data/models/served_both_gpus.sh [BUILD_DIR]
# Splits the H100's and the H200's served rows as served.sh does (split_served.py: the same ten
# families and fifth of the random shapes held out on both), trains the networks for GEMMs without
# a config on both GPUs' training rows (as served.sh trains them on the H100's: one per data type,
# the bundled GEMM model choosing the configs) and scores them on each GPU's held-out rows from
# the shape alone. The networks are not kept (the tree's size). Writes
# data/models/report/served/both_gpus/{h100,h200}/ and the training logs. About 40 minutes on 2 cores.
# NETWORKS=4 in the environment: each network an ensemble of four (served_train.sh), the reports in
# data/models/report/served/both_gpus_ensemble4/. HIDDEN=W1,W2,W3: networks of those hidden widths
# (served_train.sh), the reports in data/models/report/served/both_gpus_hidden_W1-W2-W3/.
# CONFIG_PICK=analytical_default: networks reading the analytical default config's demand
# (served_train.sh), the reports in data/models/report/served/both_gpus_pick_analytical_default/.
set -euo pipefail
cd "$(dirname "$0")/../.."
cli="${1:-build}/pipeweave"
root=data/models/report/served/both_gpus
[[ ${NETWORKS:-1} == 1 ]] || root+=_ensemble${NETWORKS}
[[ -z ${HIDDEN:-} ]] || root+=_hidden_${HIDDEN//,/-}
[[ -z ${CONFIG_PICK:-} ]] || root+=_pick_${CONFIG_PICK}
source data/models/served_split_both.sh
source data/models/served_train.sh
train_served "$h100_split/configless_{dtype}.json" "$root" bf16 fp8 --data "$h100_split/train.csv" --data "$h200_split/train.csv"
models=(--model "$h100_split/configless_bf16.json" --model "$h100_split/configless_fp8.json")
split=$h100_split out=$root/h100 score served_both_without_configs "${models[@]}"
split=$h200_split out=$root/h200 score served_both_without_configs "${models[@]}"
