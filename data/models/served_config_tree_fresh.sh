#!/usr/bin/env bash
# The decision tree of served_config_tree.sh on the fresh draws, and the network it makes:
#   PYTHON=venv/bin/python [DTYPE=fp8|bf16] bash data/models/served_config_tree_fresh.sh [BUILD_DIR]
# PYTHON: an interpreter with numpy and scikit-learn (PyPI). About 15 minutes on 2 cores. DTYPE
# (fp8): the data type. fp8's is the bundled model (the training side's validation chose the tree
# over the GEMM model's pick for fp8 from 2026-11-28); bf16's (answering fp16 too) is the bundled bf16
# model's second view (served_second_view.sh, since 2026-11-29: the bundled bf16 network reads the
# pick, and answers with the geometric mean of its latency and this one's).
# 1. The tree (one row a leaf, as chosen there) learns cuBLAS's config from every served row of the type of
#    seeds 1-3 of both GPUs, as the bundled networks were trained on, from the shape's scale and its
#    remainders (served_config_tree.py --remainders; REMAINDERS=0: the nine inputs of the scale alone,
#    the bundled tree until 2026-11-29), and from the H200's cuBLAS choices without a time
#    (served_config_tree.py --choices data/measurements/H200-SXM/cublas_choice_seed*.csv.gz, every list
#    committed, but the fresh draws' shapes; CHOICES=0: without them, the bundled tree until 2026-11-29); the training
#    rows get its out-of-fold configs.
# 2. A GEMM network trained on those rows given those configs (served_train.sh's recipe), joined
#    with the tree into a network for GEMMs of the type without a config (served_config_tree_model.py).
# 3. Its factor for the mean bias fitted on its training rows of each GPU, predicted from the shape
#    as the library answers them (served_scale.py, written into the model), and the fresh draws
#    (seeds 4 and 5 of each GPU) scored from the shape, as predicted and with the factor.
# TRAIN_SEEDS (none): fresh draws trained on too (e.g. "4 5": seeds 4 and 5 of each GPU that has them,
# the factor fitted over them as well, their shapes' choices learnt); TEST_SEEDS ("4 5", the bundled
# recipe's): the fresh draws scored (e.g. "9 10": the H200's of 2026-11-29), their shapes' choices left out; a seed in both is refused.
# Writes data/models/report/served/config_tree/fresh/{tree,train}_fp8.log and scores.txt (bf16:
# fresh_bf16/; REPORT=DIR: there instead), and the model to $MODEL_OUT where that is set (data/models/gemm_configless_fp8.json.gz:
# the bundled one; a name ending .gz gets the file gzip-compressed, without a name or time in its header).
set -euo pipefail
cli=$(realpath "${1:-$(dirname "$0")/../../build}")/pipeweave  # (these two resolved before the cd below)
report=${REPORT:+$(realpath -m "$REPORT")}
cd "$(dirname "$0")/../.."
py=${PYTHON:-python3}
dtype=${DTYPE:-fp8}
case $dtype in
  fp8) types=fp8_e4m3,fp8_e5m2 out=data/models/report/served/config_tree/fresh ;;
  bf16) types=bf16,fp16 out=data/models/report/served/config_tree/fresh_bf16 ;;
  *) echo "served_config_tree_fresh.sh: DTYPE must be fp8 or bf16, got $dtype" >&2; exit 2 ;;
esac
out=${report:-$out}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
m=data/measurements
# The rows trained on (seeds 1-3 of both GPUs, and the fresh draws of TRAIN_SEEDS) and the draws scored.
# (each with a name for its report: GPU, or GPU_SEED)
train_files=("$m/H100-SXM/gemm_served_$dtype.csv.gz" "$m/H200-SXM/gemm_served_$dtype.csv.gz") train_names=(H100-SXM H200-SXM)
test_files=() test_names=()
data_note="$m/{H100,H200}-SXM/gemm_served_$dtype.csv.gz"
for seed in ${TRAIN_SEEDS:-}; do
  if [[ " ${TEST_SEEDS:-4 5} " == *" $seed "* ]]; then
    echo "served_config_tree_fresh.sh: seed $seed is in both TRAIN_SEEDS and TEST_SEEDS: a draw is trained on or scored, not both" >&2
    exit 2
  fi
done
for gpu in H100-SXM H200-SXM; do
  for seed in ${TRAIN_SEEDS:-}; do
    file=$m/$gpu/gemm_served_seed${seed}_$dtype.csv.gz
    if [[ -f $file ]]; then train_files+=("$file") train_names+=("${gpu}_$seed") data_note+=", $file"; fi
  done
  for seed in ${TEST_SEEDS:-4 5}; do
    file=$m/$gpu/gemm_served_seed${seed}_$dtype.csv.gz
    if [[ -f $file ]]; then test_files+=("$file") test_names+=("${gpu}_$seed"); fi
  done
done
tree_flags=()
[[ ${REMAINDERS:-1} == 0 ]] || tree_flags+=(--remainders)
[[ ${CHOICES:-1} == 0 ]] || tree_flags+=(--choices "$m"/H200-SXM/cublas_choice_seed*.csv.gz)
"$py" data/models/served_config_tree.py "$work" "${train_files[@]}" --test "${test_files[@]}" --dtype "$dtype" --leaf 1 --tree-json "$work/tree_$dtype.json" \
  "${tree_flags[@]}" | tee "$out/tree_$dtype.log"
"$cli" train --op gemm --data "$work/train_$dtype.csv" --specs data/gpus --epochs 160 --patience 160 --lr 3e-3 --batch 512 \
  --protocol served --out "$work/gemm_$dtype.json" 2> "$out/train_$dtype.log"
model=$work/gemm_configless_$dtype.json
python3 data/models/served_config_tree_model.py "$work/gemm_$dtype.json" "$work/tree_$dtype.json" --dtypes "$types" --out "$model" \
  --data "$data_note at the tree's out-of-fold configs (served_config_tree_fresh.sh)"
fits=() scores=()
for i in "${!train_files[@]}"; do
  fit=$work/fit_${train_names[$i]}
  "$cli" eval --without-configs --model "$model" --data "${train_files[$i]}" --specs data/gpus --report "$fit" > /dev/null
  fits+=(--fit "$fit/eval.csv")
done
for i in "${!test_files[@]}"; do
  fresh=$work/fresh_${test_names[$i]}
  "$cli" eval --without-configs --model "$model" --data "${test_files[$i]}" --specs data/gpus --report "$fresh" > /dev/null
  scores+=(--score "$fresh/eval.csv" "${test_files[$i]}")
done
python3 data/models/served_scale.py "${fits[@]}" "${scores[@]}" --write "$dtype=$model" | tee "$out/scores.txt"
if [[ -n ${MODEL_OUT:-} ]]; then
  if [[ $MODEL_OUT == *.gz ]]; then gzip -9 -n -c "$model" > "$MODEL_OUT"; else cp "$model" "$MODEL_OUT"; fi
fi
