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
# Writes data/models/report/served/config_tree/fresh/{tree,train}_fp8.log and scores.txt (bf16:
# fresh_bf16/), and the model to $MODEL_OUT where that is set (data/models/gemm_configless_fp8.json.gz:
# the bundled one; a name ending .gz gets the file gzip-compressed, without a name or time in its header).
set -euo pipefail
cli=$(realpath "${1:-$(dirname "$0")/../../build}")/pipeweave  # (resolved before the cd below)
cd "$(dirname "$0")/../.."
py=${PYTHON:-python3}
dtype=${DTYPE:-fp8}
case $dtype in
  fp8) types=fp8_e4m3,fp8_e5m2 out=data/models/report/served/config_tree/fresh ;;
  bf16) types=bf16,fp16 out=data/models/report/served/config_tree/fresh_bf16 ;;
  *) echo "served_config_tree_fresh.sh: DTYPE must be fp8 or bf16, got $dtype" >&2; exit 2 ;;
esac
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
m=data/measurements
tree_flags=()
[[ ${REMAINDERS:-1} == 0 ]] || tree_flags+=(--remainders)
[[ ${CHOICES:-1} == 0 ]] || tree_flags+=(--choices "$m"/H200-SXM/cublas_choice_seed*.csv.gz)
"$py" data/models/served_config_tree.py "$work" "$m/H100-SXM/gemm_served_$dtype.csv.gz" "$m/H200-SXM/gemm_served_$dtype.csv.gz" \
  --test "$m"/{H100,H200}-SXM/gemm_served_seed{4,5}_$dtype.csv.gz --dtype "$dtype" --leaf 1 --tree-json "$work/tree_$dtype.json" \
  "${tree_flags[@]}" | tee "$out/tree_$dtype.log"
"$cli" train --op gemm --data "$work/train_$dtype.csv" --specs data/gpus --epochs 160 --patience 160 --lr 3e-3 --batch 512 \
  --protocol served --out "$work/gemm_$dtype.json" 2> "$out/train_$dtype.log"
model=$work/gemm_configless_$dtype.json
python3 data/models/served_config_tree_model.py "$work/gemm_$dtype.json" "$work/tree_$dtype.json" --dtypes "$types" --out "$model" \
  --data "$m/{H100,H200}-SXM/gemm_served_$dtype.csv.gz at the tree's out-of-fold configs (served_config_tree_fresh.sh)"
fits=() scores=()
for gpu in H100-SXM H200-SXM; do
  "$cli" eval --without-configs --model "$model" --data "$m/$gpu/gemm_served_$dtype.csv.gz" --specs data/gpus --report "$work/fit_$gpu" > /dev/null
  fits+=(--fit "$work/fit_$gpu/eval.csv")
  for seed in 4 5; do
    data=$m/$gpu/gemm_served_seed${seed}_$dtype.csv.gz
    "$cli" eval --without-configs --model "$model" --data "$data" --specs data/gpus --report "$work/fresh_${gpu}_$seed" > /dev/null
    scores+=(--score "$work/fresh_${gpu}_$seed/eval.csv" "$data")
  done
done
python3 data/models/served_scale.py "${fits[@]}" "${scores[@]}" --write "$dtype=$model" | tee "$out/scores.txt"
if [[ -n ${MODEL_OUT:-} ]]; then
  if [[ $MODEL_OUT == *.gz ]]; then gzip -9 -n -c "$model" > "$MODEL_OUT"; else cp "$model" "$MODEL_OUT"; fi
fi
