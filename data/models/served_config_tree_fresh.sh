#!/usr/bin/env bash
# The decision tree of served_config_tree.sh on the fresh draws, a study (docs/experiments/served-gemms.md):
#   PYTHON=venv/bin/python bash data/models/served_config_tree_fresh.sh [BUILD_DIR]
# PYTHON: an interpreter with numpy and scikit-learn (PyPI). About 15 minutes on 2 cores. fp8 only
# (where the training side's validation chose the tree over the GEMM model's pick).
# 1. The tree (one row a leaf, as chosen there) learns cuBLAS's config from every fp8 served row of
#    seeds 1-3 of both GPUs, as the bundled networks were trained on; the training rows get its
#    out-of-fold configs, the fresh draws (seeds 4 and 5 of each GPU) its own.
# 2. A GEMM network trained on those rows given those configs (served_train.sh's recipe).
# 3. Its factor for the mean bias fitted on its training rows of each GPU (served_scale.py), and
#    the fresh draws scored given the tree's configs, as predicted and with the factor.
# Writes data/models/report/served/config_tree/fresh/{tree,train}_fp8.log and scores.txt. The
# network is not kept.
set -euo pipefail
cli=$(realpath "${1:-$(dirname "$0")/../../build}")/pipeweave  # (resolved before the cd below)
cd "$(dirname "$0")/../.."
py=${PYTHON:-python3}
out=data/models/report/served/config_tree/fresh
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
m=data/measurements
fresh=()
for gpu in H100-SXM H200-SXM; do
  for seed in 4 5; do fresh+=("$m/$gpu/gemm_served_seed${seed}_fp8.csv.gz"); done
done
"$py" data/models/served_config_tree.py "$work" "$m/H100-SXM/gemm_served_fp8.csv.gz" "$m/H200-SXM/gemm_served_fp8.csv.gz" \
  --test "${fresh[@]}" --dtype fp8 --leaf 1 --by-seed | tee "$out/tree_fp8.log"
"$cli" train --op gemm --data "$work/train_fp8.csv" --specs data/gpus --epochs 160 --patience 160 --lr 3e-3 --batch 512 \
  --protocol served --out "$work/gemm_fp8.json" 2> "$out/train_fp8.log"
fits=() scores=()
for gpu in H100-SXM H200-SXM; do
  awk -F, -v gpu="$gpu" 'NR == 1 || $1 == gpu' "$work/train_fp8.csv" > "$work/train_$gpu.csv"
  "$cli" eval --model "$work/gemm_fp8.json" --data "$work/train_$gpu.csv" --specs data/gpus --report "$work/fit_$gpu" > /dev/null
  fits+=(--fit "$work/fit_$gpu/eval.csv")
  for seed in 4 5; do
    "$cli" eval --model "$work/gemm_fp8.json" --data "$work/test_fp8_${gpu}_seed$seed.csv" --specs data/gpus \
      --report "$work/fresh_${gpu}_$seed" > /dev/null
    scores+=(--score "$work/fresh_${gpu}_$seed/eval.csv" "$m/$gpu/gemm_served_seed${seed}_fp8.csv.gz")
  done
done
python3 data/models/served_scale.py "${fits[@]}" "${scores[@]}" | tee "$out/scores.txt"
