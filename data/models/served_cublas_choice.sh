#!/usr/bin/env bash
# cuBLAS's choice of kernel from the nearest measured shapes, a study (docs/experiments/served-gemms.md):
#   PYTHON=venv/bin/python bash data/models/served_cublas_choice.sh [BUILD_DIR]
# PYTHON: an interpreter with numpy and scikit-learn (PyPI). About 17 minutes on 2 cores.
# 0. How many distinct configs cuBLAS ran per GPU and data type (configs.txt).
# 1. Splits both GPUs' served rows as served_both_gpus.sh does (split_served.py), then the training
#    side again (inner-split: eight more families, another fifth of the random shapes) to choose the
#    rule on rows the final scores never see.
# 2. Inner: trains a GEMM model given the config on the inner training rows of both GPUs (as
#    served.sh trains its own), and scores rules over the configs cuBLAS ran on the nearest 1-32
#    inner training rows of each inner test row (inner.txt).
# 3. Outer: the same model trained on the whole training side, the rules scored on the held-out
#    families and random shapes (outer_{H100,H200}-SXM.txt).
# 4. Fresh draws: the same model trained on every served row of seeds 1-3 (both GPUs), the fastest of
#    the configs of the 16 nearest rows, beside the bundled networks without configs and the means
#    of the two, on the H100's fresh draws (fresh_seed{4,5}.txt).
# Writes data/models/report/served/cublas_choice/. The models are not kept (the tree's size).
set -euo pipefail
cli=$(realpath "${1:-$(dirname "$0")/../../build}")/pipeweave  # (resolved before the cd below)
cd "$(dirname "$0")/../.."
py=${PYTHON:-python3}
study=data/models/served_cublas_choice.py
out=data/models/report/served/cublas_choice
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
train_with_configs() {  # MODEL LOG DATA...: a GEMM model given the config, as served.sh trains one
  local model=$1 log=$2
  shift 2
  local args=()
  for data in "$@"; do args+=(--data "$data"); done
  "$cli" train --op gemm "${args[@]}" --specs data/gpus --epochs 80 --patience 80 --lr 3e-3 --batch 512 --out "$model" 2> "$log" ||
    { cat "$log" >&2; exit 1; }  # (the log is in the work folder, which goes on exit)
}
keep_configs() { grep -v ",unknown," "$1" > "$2"; }  # rows whose tile nothing says left out

"$py" "$study" configs data/measurements/{H100-SXM,H200-SXM}/gemm_served_{bf16,fp8}.csv.gz > "$out/configs.txt"
for gpu in H100-SXM H200-SXM; do
  python3 data/models/split_served.py "$work/$gpu" "data/measurements/$gpu/gemm_served_bf16.csv.gz" \
    "data/measurements/$gpu/gemm_served_fp8.csv.gz"
  "$py" "$study" inner-split "$work/$gpu/inner" "$work/$gpu/train.csv"
  keep_configs "$work/$gpu/train.csv" "$work/$gpu/train_configs.csv"
  keep_configs "$work/$gpu/inner/train.csv" "$work/$gpu/inner/train_configs.csv"
done

# 2. inner
train_with_configs "$work/inner.json" "$work/inner.train.log" "$work"/{H100-SXM,H200-SXM}/inner/train_configs.csv
: > "$out/inner.txt"
for gpu in H100-SXM H200-SXM; do
  "$py" "$study" candidates --train "$work/H100-SXM/inner/train.csv" --train "$work/H200-SXM/inner/train.csv" \
    --test "$work/$gpu/inner/test.csv" --k 32 --out "$work/inner_$gpu"
  "$cli" eval --model "$work/inner.json" --data "$work/inner_${gpu}_cands.csv" --specs data/gpus --report "$work/inner_$gpu" > /dev/null
  { echo "== $gpu, inner held-out rows"; "$py" "$study" score --eval "$work/inner_$gpu/eval.csv" \
      --meta "$work/inner_${gpu}_meta.csv" --test "$work/$gpu/inner/test.csv"; } >> "$out/inner.txt"
done

# 3. outer
train_with_configs "$work/outer.json" "$work/outer.train.log" "$work"/{H100-SXM,H200-SXM}/train_configs.csv
for gpu in H100-SXM H200-SXM; do
  "$py" "$study" candidates --train "$work/H100-SXM/train.csv" --train "$work/H200-SXM/train.csv" \
    --test "$work/$gpu/test.csv" --k 32 --out "$work/outer_$gpu"
  "$cli" eval --model "$work/outer.json" --data "$work/outer_${gpu}_cands.csv" --specs data/gpus --report "$work/outer_$gpu" > /dev/null
  "$py" "$study" score --eval "$work/outer_$gpu/eval.csv" --meta "$work/outer_${gpu}_meta.csv" --test "$work/$gpu/test.csv" \
    > "$out/outer_$gpu.txt"
done

# 4. fresh draws
all=()
for gpu in H100-SXM H200-SXM; do
  for dtype in bf16 fp8; do
    zcat "data/measurements/$gpu/gemm_served_$dtype.csv.gz" > "$work/all_${gpu}_$dtype.csv"
    keep_configs "$work/all_${gpu}_$dtype.csv" "$work/all_${gpu}_${dtype}_configs.csv"
    all+=("$work/all_${gpu}_${dtype}_configs.csv")
  done
done
train_with_configs "$work/all.json" "$work/all.train.log" "${all[@]}"
for seed in 4 5; do
  fresh=$work/seed$seed.csv
  { zcat "data/measurements/H100-SXM/gemm_served_seed${seed}_bf16.csv.gz"
    zcat "data/measurements/H100-SXM/gemm_served_seed${seed}_fp8.csv.gz" | tail -n +2; } > "$fresh"
  train_args=()
  for file in "${all[@]}"; do train_args+=(--train "$file"); done
  "$py" "$study" candidates "${train_args[@]}" --test "$fresh" --k 16 --out "$work/fresh$seed"
  "$cli" eval --model "$work/all.json" --data "$work/fresh${seed}_cands.csv" --specs data/gpus --report "$work/fresh$seed" > /dev/null
  "$cli" eval --without-configs --data "$fresh" --specs data/gpus --report "$work/fresh${seed}_configless" > /dev/null
  "$py" "$study" score --eval "$work/fresh$seed/eval.csv" --meta "$work/fresh${seed}_meta.csv" --test "$fresh" \
    --configless "$work/fresh${seed}_configless/eval.csv" --k 16 > "$out/fresh_seed$seed.txt"
done
head -n 100 "$out"/*.txt
