#!/usr/bin/env bash
# The decision tree of served_config_tree.sh on the fresh draws, and the network it makes:
#   PYTHON=venv/bin/python bash data/models/served_config_tree_fresh.sh [BUILD_DIR]
# PYTHON: an interpreter with numpy and scikit-learn (PyPI). About 15 minutes on 2 cores. fp8 only
# (where the training side's validation chose the tree over the GEMM model's pick).
# 1. The tree (one row a leaf, as chosen there) learns cuBLAS's config from every fp8 served row of
#    seeds 1-3 of both GPUs, as the bundled networks were trained on, from the shape's scale and its
#    remainders (served_config_tree.py --remainders; REMAINDERS=0: the nine inputs of the scale alone,
#    the bundled tree until 2026-11-29); the training rows get its out-of-fold configs.
# 2. A GEMM network trained on those rows given those configs (served_train.sh's recipe), joined
#    with the tree into a network for fp8 GEMMs without a config (served_config_tree_model.py).
# 3. Its factor for the mean bias fitted on its training rows of each GPU, predicted from the shape
#    as the library answers them (served_scale.py, written into the model), and the fresh draws
#    (seeds 4 and 5 of each GPU) scored from the shape, as predicted and with the factor.
# Writes data/models/report/served/config_tree/fresh/{tree,train}_fp8.log and scores.txt, and the
# model to $MODEL_OUT where that is set (data/models/gemm_configless_fp8.json: the bundled one).
set -euo pipefail
cli=$(realpath "${1:-$(dirname "$0")/../../build}")/pipeweave  # (resolved before the cd below)
cd "$(dirname "$0")/../.."
py=${PYTHON:-python3}
out=data/models/report/served/config_tree/fresh
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
m=data/measurements
"$py" data/models/served_config_tree.py "$work" "$m/H100-SXM/gemm_served_fp8.csv.gz" "$m/H200-SXM/gemm_served_fp8.csv.gz" \
  --test "$m/H100-SXM/gemm_served_seed4_fp8.csv.gz" --dtype fp8 --leaf 1 --tree-json "$work/tree_fp8.json" \
  $([[ ${REMAINDERS:-1} == 0 ]] || echo --remainders) | tee "$out/tree_fp8.log"
"$cli" train --op gemm --data "$work/train_fp8.csv" --specs data/gpus --epochs 160 --patience 160 --lr 3e-3 --batch 512 \
  --protocol served --out "$work/gemm_fp8.json" 2> "$out/train_fp8.log"
model=$work/gemm_configless_fp8.json
python3 data/models/served_config_tree_model.py "$work/gemm_fp8.json" "$work/tree_fp8.json" --dtypes fp8_e4m3,fp8_e5m2 --out "$model" \
  --data "$m/{H100,H200}-SXM/gemm_served_fp8.csv.gz at the tree's out-of-fold configs (served_config_tree_fresh.sh)"
fits=() scores=()
for gpu in H100-SXM H200-SXM; do
  "$cli" eval --without-configs --model "$model" --data "$m/$gpu/gemm_served_fp8.csv.gz" --specs data/gpus --report "$work/fit_$gpu" > /dev/null
  fits+=(--fit "$work/fit_$gpu/eval.csv")
  for seed in 4 5; do
    data=$m/$gpu/gemm_served_seed${seed}_fp8.csv.gz
    "$cli" eval --without-configs --model "$model" --data "$data" --specs data/gpus --report "$work/fresh_${gpu}_$seed" > /dev/null
    scores+=(--score "$work/fresh_${gpu}_$seed/eval.csv" "$data")
  done
done
python3 data/models/served_scale.py "${fits[@]}" "${scores[@]}" --write "fp8=$model" | tee "$out/scores.txt"
[[ -z ${MODEL_OUT:-} ]] || cp "$model" "$MODEL_OUT"
