#!/usr/bin/env bash
# cuBLAS's choice of kernel learnt by a decision tree, a study (docs/experiments/served-gemms.md):
#   PYTHON=venv/bin/python bash data/models/served_config_tree.sh [BUILD_DIR]
# PYTHON: an interpreter with numpy and scikit-learn (PyPI). About 15 minutes on 2 cores.
# 1. Splits both GPUs' served rows as served_both_gpus.sh does (split_served.py: ten families and a
#    fifth of the random shapes held out).
# 2. Per data type, a decision tree learns the config cuBLAS ran from the shape and the GPU's
#    bandwidth on the training rows (served_config_tree.py; its leaf size chosen out of fold there),
#    and writes the training rows with its out-of-fold configs and the held-out rows with its own.
# 3. Per data type, a GEMM network trained on those rows with those configs (served_train.sh's
#    recipe: 160 epochs, learning rate 3e-3, batch 512), scored on each GPU's held-out rows given
#    the tree's config: a network for GEMMs without a config that reads the demand of the config
#    the tree expects cuBLAS to run, where the bundled ones read the GEMM model's pick.
# Writes data/models/report/served/config_tree/{tree,train}_{bf16,fp8}.log and, per GPU,
# {h100,h200}/tree_config_{bf16,fp8}.txt with their per-family tables. The networks are not kept.
set -euo pipefail
cli=$(realpath "${1:-$(dirname "$0")/../../build}")/pipeweave  # (resolved before the cd below)
cd "$(dirname "$0")/../.."
py=${PYTHON:-python3}
root=data/models/report/served/config_tree
source data/models/served_split_both.sh
work=$(mktemp -d)
splits+=("$work")
pids=()
for dtype in bf16 fp8; do
  "$py" data/models/served_config_tree.py "$work" "$h100_split/train.csv" "$h200_split/train.csv" \
    --test "$h100_split/test.csv" "$h200_split/test.csv" --dtype $dtype --leaf 1 3 10 > "$root/tree_$dtype.log" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
cat "$root"/tree_*.log
pids=()
for dtype in bf16 fp8; do
  "$cli" train --op gemm --data "$work/train_$dtype.csv" --specs data/gpus --epochs 160 --patience 160 --lr 3e-3 --batch 512 \
    --protocol served --out "$work/gemm_$dtype.json" 2> "$root/train_$dtype.log" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
for gpu in H100-SXM H200-SXM; do
  out=$root/h100 split=$h100_split
  [[ $gpu == H200-SXM ]] && out=$root/h200 split=$h200_split
  for dtype in bf16 fp8; do
    name=tree_config_$dtype
    "$cli" eval --model "$work/gemm_$dtype.json" --data "$work/test_${dtype}_$gpu.csv" --specs data/gpus --report "$work/$name$gpu" \
      > "$out/$name.txt"
    python3 data/models/served_report.py "$work/$name$gpu/eval.csv" "$split/test.csv" --csv "$out/$name.families.csv" >> "$out/$name.txt"
    grep -E "(model families|random shapes) " "$out/$name.txt" | sed "s/^/$gpu /"
  done
done
