#!/usr/bin/env bash
# Retrains the bundled models from the committed measurements and re-evaluates them:
#   bash data/models/train_all.sh [BUILD_DIR [ARCHIVE]]   (default: build, ../shared/public-data/pipeweave-published.tar.xz)
# Each op family's network is trained on the H100 and H200 data (every family also on
# the transfer set: the SM-limited H100s, and for GEMM the published fp8 rows of ARCHIVE) with 20% of the shapes held
# out (seed 1), then scored on those held-out shapes (GEMM, with 8x the rows of the others,
# trains longer with larger batches and a higher learning rate, and all 300 epochs: its
# validation figure jumps about while the rate is high, and stopping 40 epochs after a lucky
# early low kept an unrefined network); the GEMM network is also trained once
# with the H200 left out entirely and scored on the H200 (the unseen-GPU case); that model is
# kept in data/models/holdout/ (not bundled: examples/calibrate_new_gpu fine-tunes it); and as
# an ensemble of four networks with a ranking term beside the MAPE (--rank-weight 3 --networks 4),
# for an autotuner that orders a shape's configs: data/models/ranking/gemm_rank3.json.gz (not
# bundled: it orders configs better, predicts latencies a little worse, and costs four networks'
# time); the networks for GEMMs without a config trained on these rested rows go to
# data/models/rested/ (an option: the bundled ones are trained on served rows by served_all.sh,
# which needs the GEMM model this script writes). Reports go to
# data/models/report/. The bundled models are compiled into the library at the next build.
set -euo pipefail
cd "$(dirname "$0")/../.."
cli="${1:-build}/pipeweave"
archive="${2:-../shared/public-data/pipeweave-published.tar.xz}"
# GEMM reads the published fp8 rows from the archive; without it, retrain the others (ONLY=...).
if [[ " ${ONLY:-gemm} " == *" gemm "* && ! -f $archive ]]; then
  echo "$0: GEMM trains on the published fp8 rows of $archive, which is missing; give its path as the second" \
    "argument, or ONLY=\"rmsnorm silu_mul attention\" to retrain the others" >&2
  exit 2
fi
published=$(mktemp -d)
trap 'rm -rf "$published"' EXIT
data=data/measurements
report=data/models/report
mkdir -p "$report" data/models/holdout
gemm_options=(--epochs 300 --patience 300 --lr 3e-3 --batch 512)
# ONLY=attention (or another family) retrains that family's bundled model alone and stops.
for op in ${ONLY:-gemm rmsnorm silu_mul attention}; do
  options=(--epochs 150)
  [[ $op == gemm ]] && options=("${gemm_options[@]}")
  files=()
  for gpu in H100-SXM H200-SXM; do
    files+=(--data "$data/$gpu/$op.csv.gz")
    # RMSNorm and SiLU-mul also learn from the H100 confined to 16-72 of its SMs (other
    # compute/memory balances: docs/experiments/other-balances.md); GEMM below
    if [[ $op == rmsnorm || $op == silu_mul ]]; then
      for n in 16 32 64 72; do [[ $gpu == H100-SXM ]] && files+=(--data "$data/H100-SXM-sm$n/$op.csv.gz"); done
    fi
    # attention likewise: FlashAttention-2 and -3 on a subset of the prompt and decode lists
    if [[ $op == attention && $gpu == H100-SXM ]]; then
      for n in 16 32 64 72; do
        files+=(--data "$data/H100-SXM-sm$n/attention.csv.gz" --data "$data/H100-SXM-sm$n/attention_fa3.csv.gz")
      done
    fi
    # attention also learns from decode batches at serving contexts (data/shapes/attention_decode.csv),
    # from FlashAttention-3 (the same shape lists, prompts ragged, decode over a paged cache of
    # 1-token pages as SGLang keeps it, of 16-token pages as vLLM does, and contiguous), and from both
    # implementations at head sizes 64 and 256 (data/shapes/attention*_hd{64,256}.csv); the bulk
    # lists are kept compressed (.csv.gz)
    if [[ $op == attention ]]; then
      files+=(--data "$data/$gpu/attention_decode.csv.gz")
      for list in attention_fa3 attention_decode_fa3 attention_decode_fa3_page16 attention_decode_fa3_contiguous; do
        files+=(--data "$data/$gpu/$list.csv.gz")
        for hd in 64 256; do files+=(--data "$data/$gpu/${list}_hd$hd.csv.gz"); done
      done
      for hd in 64 256; do
        files+=(--data "$data/$gpu/attention_hd$hd.csv.gz" --data "$data/$gpu/attention_decode_hd$hd.csv.gz")
      done
      # large decode batches over long contexts (data/shapes/attention_decode_long.csv), both implementations
      for list in attention_decode_long attention_decode_long_fa3 attention_decode_long_fa3_page16 \
                  attention_decode_long_fa3_contiguous; do
        files+=(--data "$data/$gpu/$list.csv.gz")
      done
    fi
  done
  if [[ $op == gemm ]]; then
    # GEMM learns from the transfer set: the SM-limited H100s (cuBLASLt's candidates, bf16 and
    # fp8) and the published fp8 rows of the H20 and H800 (the archive's gemm_fp8_train.csv, read
    # as published: docs/experiments/transfer.md)
    for f in "$data"/H100-SXM-sm{16,32,64,72}/gemm-seed*.csv.gz; do files+=(--data "$f"); done
    tar xJf "$archive" -C "$published" ./gemm_fp8_train.csv
    files+=(--data "$published/gemm_fp8_train.csv")
  fi
  "$cli" train --op "$op" "${files[@]}" --specs data/gpus "${options[@]}" --out "data/models/$op.json" 2> "$report/$op.train.log"
  "$cli" eval --model "data/models/$op.json" --held-out "${files[@]}" --specs data/gpus --json > "$report/$op.eval.json"
  "$cli" eval --model "data/models/$op.json" --held-out "${files[@]}" --specs data/gpus
done
[[ -n ${ONLY:-} ]] && exit 0
# The autotuner's question: how well the GEMM model orders each held-out shape's cuBLASLt candidates.
"$cli" eval --model data/models/gemm.json --held-out --ranking --data "$data/H100-SXM/gemm.csv.gz" \
  --data "$data/H200-SXM/gemm.csv.gz" --specs data/gpus --json > "$report/gemm.ranking.json"
"$cli" eval --model data/models/gemm.json --held-out --ranking --data "$data/H100-SXM/gemm.csv.gz" \
  --data "$data/H200-SXM/gemm.csv.gz" --specs data/gpus
# A GEMM given without its config (what a serving workload asks): the GEMM model picks the
# config; scored against the time of what cuBLAS ran first. First the GEMM model alone (its
# prediction for the pick times its configless_scale), then the network for GEMMs
# without a config, trained on cuBLAS's first choices with the demand of the configs the GEMM
# model just trained picks (--chooser; eval pairs the network with the chooser it records).
"$cli" eval --model data/models/gemm.json --held-out --without-configs --data "$data/H100-SXM/gemm.csv.gz" \
  --data "$data/H200-SXM/gemm.csv.gz" --specs data/gpus --json > "$report/gemm.configless_scale.json"
"$cli" eval --model data/models/gemm.json --held-out --without-configs --data "$data/H100-SXM/gemm.csv.gz" \
  --data "$data/H200-SXM/gemm.csv.gz" --specs data/gpus
# One network per data type (--dtypes; the features carry none), bf16 and fp8 side by side;
# each also answers for the type of its tensor path measured by neither (fp16, fp8_e5m2).
configless_options=(--without-configs --epochs 300 --patience 300 --lr 3e-3 --batch 128)
pids=()
for types in bf16,fp16 fp8_e4m3,fp8_e5m2; do
  name=${types%%,*}
  name=${name%_e4m3}
  "$cli" train --op gemm --data "$data/H100-SXM/gemm.csv.gz" --data "$data/H200-SXM/gemm.csv.gz" --specs data/gpus \
    "${configless_options[@]}" --dtypes "$types" --chooser data/models/gemm.json --out "data/models/rested/gemm_configless_$name.json" \
    2> "$report/gemm_configless_$name.train.log" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done  # a bare wait would not fail with a failed training
configless=(--model data/models/rested/gemm_configless_bf16.json --model data/models/rested/gemm_configless_fp8.json)
"$cli" eval "${configless[@]}" --held-out --without-configs --data "$data/H100-SXM/gemm.csv.gz" \
  --data "$data/H200-SXM/gemm.csv.gz" --specs data/gpus --json > "$report/gemm_configless.eval.json"
"$cli" eval "${configless[@]}" --held-out --without-configs --data "$data/H100-SXM/gemm.csv.gz" \
  --data "$data/H200-SXM/gemm.csv.gz" --specs data/gpus
# The unseen GPU: GEMM trained without any H200 row, scored on the H200's held-out shapes.
"$cli" train --op gemm --data "$data/H100-SXM/gemm.csv.gz" --data "$data/H200-SXM/gemm.csv.gz" --specs data/gpus \
  "${gemm_options[@]}" --holdout-gpu H200-SXM --out data/models/holdout/gemm_without_h200.json 2> "$report/gemm_without_h200.train.log"
"$cli" eval --model data/models/holdout/gemm_without_h200.json --held-out --data "$data/H200-SXM/gemm.csv.gz" --specs data/gpus \
  --json > "$report/gemm_without_h200.eval.json"
"$cli" eval --model data/models/holdout/gemm_without_h200.json --held-out --data "$data/H200-SXM/gemm.csv.gz" --specs data/gpus
"$cli" eval --model data/models/holdout/gemm_without_h200.json --held-out --without-configs --data "$data/H200-SXM/gemm.csv.gz" \
  --specs data/gpus --json > "$report/gemm_without_h200.configless_scale.json"
# ...and a network for GEMMs without a config with no H200 row either (that model choosing).
"$cli" train --op gemm --data "$data/H100-SXM/gemm.csv.gz" --data "$data/H200-SXM/gemm.csv.gz" --specs data/gpus \
  "${configless_options[@]}" --chooser data/models/holdout/gemm_without_h200.json --holdout-gpu H200-SXM \
  --out data/models/holdout/gemm_configless_without_h200.json 2> "$report/gemm_configless_without_h200.train.log"
"$cli" eval --model data/models/holdout/gemm_configless_without_h200.json --held-out --without-configs \
  --data "$data/H200-SXM/gemm.csv.gz" --specs data/gpus --json > "$report/gemm_configless_without_h200.eval.json"
"$cli" eval --model data/models/holdout/gemm_configless_without_h200.json --held-out --without-configs \
  --data "$data/H200-SXM/gemm.csv.gz" --specs data/gpus
# The autotuner's variant: the same GEMM training with the ranking term, four networks from
# seeds 1-4 (two at a time on two cores), and its ranking report.
mkdir -p data/models/ranking
"$cli" train --op gemm --data "$data/H100-SXM/gemm.csv.gz" --data "$data/H200-SXM/gemm.csv.gz" --specs data/gpus \
  "${gemm_options[@]}" --rank-weight 3 --networks 4 --out data/models/ranking/gemm_rank3.json 2> "$report/gemm_rank3.train.log"
# kept compressed (model files are read gzip-compressed as well as plain)
gzip -9 -n -f data/models/ranking/gemm_rank3.json
"$cli" eval --model data/models/ranking/gemm_rank3.json.gz --held-out --data "$data/H100-SXM/gemm.csv.gz" \
  --data "$data/H200-SXM/gemm.csv.gz" --specs data/gpus --json > "$report/gemm_rank3.eval.json"
"$cli" eval --model data/models/ranking/gemm_rank3.json.gz --held-out --ranking --data "$data/H100-SXM/gemm.csv.gz" \
  --data "$data/H200-SXM/gemm.csv.gz" --specs data/gpus --json > "$report/gemm_rank3.ranking.json"
"$cli" eval --model data/models/ranking/gemm_rank3.json.gz --held-out --ranking --data "$data/H100-SXM/gemm.csv.gz" \
  --data "$data/H200-SXM/gemm.csv.gz" --specs data/gpus
# Does a held-out shape's error depend on what the GPU ran before it in the collection? (It did
# before the GEMMs were measured with rest: docs/experiments/reproducibility.md.)
if command -v python3 > /dev/null; then
  rows=$(mktemp -d)
  "$cli" eval --model data/models/gemm.json --held-out --data "$data/H100-SXM/gemm.csv.gz" --data "$data/H200-SXM/gemm.csv.gz" \
    --specs data/gpus --report "$rows" > /dev/null
  for gpu in H100-SXM H200-SXM; do
    python3 cuda_kernels/history_bias.py "$rows/eval.csv" data/shapes/gemm.csv "$data/$gpu/gemm.csv.gz" --gpu "$gpu"
  done | tee "$report/gemm.history_bias.txt"
  rm -r "$rows"
fi
