#!/usr/bin/env bash
# Two networks for GEMMs without a config, one reading the GEMM model's pick and one the decision
# tree's config, and the geometric mean of the two, a study (docs/experiments/served-gemms.md):
#   PYTHON=venv/bin/python bash data/models/served_tree_pick_mean.sh [BUILD_DIR]
# PYTHON: an interpreter with numpy and scikit-learn (PyPI). About 45 minutes on 2 cores (three lists of choices).
# 1. Splits both GPUs' served rows as served_both_gpus.sh does (ten families and a fifth of the
#    random shapes held out).
# 2. Per data type, on the training rows: the network reading the pick (served_both_gpus.sh's) and
#    the tree with the network reading its config (served_config_tree.sh's: leaf size chosen out of
#    fold, the network trained at the tree's out-of-fold configs).
# 3. Scores each, and the geometric mean of their two predictions (decided before any figure was
#    seen: the mean of two views, no weight fitted), on each GPU's held-out rows and on the fresh
#    draws (seeds 4 and 5, trained on by nothing), from the shape (served_tree_pick_mean.py); then
#    the tree's network times the factor fitted on its own training rows (as the bundled tree
#    networks carry theirs, since 2026-11-29 also in this study) and the mean with that.
# Writes data/models/report/served/tree_pick_mean/{scores.txt,tree_*.log,train_*.log} and the
# split counts in {h100,h200}/split.txt. The networks are not kept.
# REMAINDERS=1: the tree reads the shape's remainders too (served_config_tree.py --remainders);
# the report goes to data/models/report/served/tree_pick_mean_remainders/. CHOICES=1: the tree also
# learns from the H200's cuBLAS choices without a time (served_config_tree.py --choices
# data/measurements/H200-SXM/cublas_choice_seed*.csv.gz, every list committed), those of the held-out
# rows' weight shapes left out; the report's folder gains _choices.
set -euo pipefail
cli=$(realpath "${1:-$(dirname "$0")/../../build}")/pipeweave  # (resolved before the cd below)
cd "$(dirname "$0")/../.."
py=${PYTHON:-python3}
root=data/models/report/served/tree_pick_mean
tree_flags=()
if [[ ${REMAINDERS:-0} == 1 ]]; then
  root+=_remainders tree_flags=(--remainders)
fi
[[ ${CHOICES:-0} == 1 ]] && root+=_choices
source data/models/served_split_both.sh
if [[ ${CHOICES:-0} == 1 ]]; then
  tree_flags+=(--choices data/measurements/H200-SXM/cublas_choice_seed*.csv.gz --choices-exclude "$h100_split/test.csv" "$h200_split/test.csv")
fi
work=$(mktemp -d)
splits+=("$work")
m=data/measurements
fresh=("$m"/H100-SXM/gemm_served_seed{4,5}_ "$m"/H200-SXM/gemm_served_seed{4,5}_)
run_dtype() {  # dtype: the tree, then the two networks one after the other, then their scores
  local dtype=$1 files=() f
  for f in "${fresh[@]}"; do files+=("$f$dtype.csv.gz"); done
  "$py" data/models/served_config_tree.py "$work/tree" "$h100_split/train.csv" "$h200_split/train.csv" \
    --test "$h100_split/test.csv" "$h200_split/test.csv" "${files[@]}" --by-seed --dtype "$dtype" --leaf 1 3 10 "${tree_flags[@]}" \
    > "$root/tree_$dtype.log"
  "$cli" train --op gemm --data "$work/tree/train_$dtype.csv" --specs data/gpus --epochs 160 --patience 160 --lr 3e-3 \
    --batch 512 --protocol served --out "$work/tree_$dtype.json" 2> "$root/train_tree_$dtype.log"
  "$cli" eval --model "$work/tree_$dtype.json" --data "$work/tree/train_$dtype.csv" --specs data/gpus --report "$work/fit_tree_$dtype" > /dev/null
  local types=bf16
  [[ $dtype == fp8 ]] && types=fp8_e4m3,fp8_e5m2
  "$cli" train --op gemm --without-configs --dtypes "$types" --chooser data/models/gemm.json --data "$h100_split/train.csv" \
    --data "$h200_split/train.csv" --specs data/gpus --epochs 160 --patience 160 --lr 3e-3 --batch 512 --protocol served \
    --out "$work/pick_$dtype.json" 2> "$root/train_pick_$dtype.log"
  local gpu seed data
  for gpu in H100-SXM H200-SXM; do
    for seed in 1 2 3 4 5; do
      data=$work/tree/test_${dtype}_${gpu}_seed$seed.csv
      [[ -f $data ]] || continue
      "$cli" eval --model "$work/tree_$dtype.json" --data "$data" --specs data/gpus --report "$work/tree_${dtype}_${gpu}_$seed" > /dev/null
      "$cli" eval --model "$work/pick_$dtype.json" --without-configs --data "$data" --specs data/gpus \
        --report "$work/pick_${dtype}_${gpu}_$seed" > /dev/null
    done
  done
}
pids=()
for dtype in bf16 fp8; do
  run_dtype $dtype &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || { kill "${pids[@]}" 2>/dev/null; exit 1; }; done
python3 data/models/served_tree_pick_mean.py "$work" | tee "$root/scores.txt"
