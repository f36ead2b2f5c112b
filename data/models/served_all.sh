#!/usr/bin/env bash
# The bundled networks for GEMMs without a config: trained on every served row of both GPUs, scored
# on a fresh draw of shapes (docs/experiments/served-gemms.md, "The bundled networks"):
#   bash data/models/served_all.sh [BUILD_DIR]
# 1. Trains the bf16 one as served_both_gpus.sh does (the bundled GEMM model choosing the configs,
#    160 epochs, recorded as --protocol served), on all the H100's and the H200's rows of seeds 1-3
#    (gemm_served_bf16.csv.gz, every family), answering for fp16 too, and the fp8 one with the tree
#    of cuBLAS's configs (served_config_tree_fresh.sh: its own latency_scale; PYTHON, an interpreter
#    with numpy and scikit-learn, as that script asks); bf16's gets the tree's network as its second
#    view (served_second_view.sh, since 2026-11-29) -> data/models/gemm_configless_bf16.json.gz and
#    gemm_configless_fp8.json.gz,
#    the bundled ones (rebuild to embed them). bf16's pick network keeps no latency_scale (its view has its own): its factor (1.0105) would
#    cost the published serving runs' prefill 0.3 points (docs/experiments/served-gemms.md, "A
#    factor per data type").
# 2. Scores them, and the networks trained on rested rows (data/models/rested/, train_all.sh), on
#    the seed-4 and seed-5 rows (served_fresh.sh: shapes none of them was trained on)
#    -> data/models/report/served/fresh/{served_all,rested}/
# 3. Predicts the published serving runs with each (data/e2e/published/score_runs.py
#    --kernel-model) -> .../{served_all,rested}/e2e_published.txt
# About 40 minutes on 2 cores.
# In the environment: HIDDEN=W1,W2,W3 trains networks of those hidden widths (served_train.sh);
# MODEL_DIR (default data/models) takes the two networks, so that a candidate is trained beside the
# bundled ones; OUT (default data/models/report/served/fresh) takes the reports; RESTED=0 leaves out
# the rested networks' scoring (their reports stay as they are).
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
cli="$build/pipeweave"
out=${OUT:-data/models/report/served/fresh}
model_dir=${MODEL_DIR:-data/models}
kinds=(served_all)
[[ ${RESTED:-1} == 0 ]] || kinds+=(rested)
mkdir -p "$model_dir" "${kinds[@]/#/$out/}"
source data/models/served_train.sh
SERVED_DTYPES=bf16 NETWORKS=1 train_served "$model_dir/gemm_configless_{dtype}.json" "$out/served_all" bf16,fp16 fp8_e4m3,fp8_e5m2 \
  --data "data/measurements/H100-SXM/gemm_served_{dtype}.csv.gz" --data "data/measurements/H200-SXM/gemm_served_{dtype}.csv.gz"
# bf16's network gets the tree's network as its second view (served_second_view.sh), and is kept
# compressed; the network alone goes out of the folder first (were both left there on a failure, the
# build would embed both)
pick=$(mktemp --suffix=.json)
trap 'rm -f "$pick"' EXIT
mv "$model_dir/gemm_configless_bf16.json" "$pick"
PICK="$pick" MODEL_OUT="$model_dir/gemm_configless_bf16.json.gz" bash data/models/served_second_view.sh "$build"
MODEL_OUT="$model_dir/gemm_configless_fp8.json.gz" bash data/models/served_config_tree_fresh.sh "$build"
for kind in "${kinds[@]}"; do
  dir=$model_dir
  [[ $kind == rested ]] && dir=data/models/rested
  bf16=$dir/gemm_configless_bf16.json fp8=$dir/gemm_configless_fp8.json
  [[ -f $bf16.gz ]] && bf16+=.gz  # (the bundled ones are kept compressed)
  [[ -f $fp8.gz ]] && fp8+=.gz
  OUT="$out/$kind" bash data/models/served_fresh.sh "$build" --model "$bf16" --model "$fp8"
  python3 data/e2e/published/score_runs.py --pipeweave "$cli" -- --kernel-model "$bf16" \
    --kernel-model "$fp8" | tee "$out/$kind/e2e_published.txt"
done
