#!/usr/bin/env bash
# How the models transfer to GPUs they were not trained on (docs/experiments/transfer.md):
#   bash data/models/transfer.sh [BUILD_DIR [ARCHIVE]]
# 1. The published fp8 training split (H20 and H800; ARCHIVE defaults to
#    ../shared/public-data/pipeweave-published.tar.xz), read as published (the tile the published
#    method assumes, timed back to back): trained on both and scored on the held-out shapes; then
#    trained with each GPU left out and scored on it, beside the roofline.
# 2. Leave one GPU out, per op family, over every GPU measured: GEMMs (cuBLAS's first choice with
#    the config it ran) on the H100, the H200, the four SM-limited H100s and the published H20 and
#    H800 rows; RMSNorm and SiLU-mul on the H100, the H200 and the SM-limited H100s where measured;
#    each GPU left out of training in turn and scored on its held-out shapes; attention
#    (FlashAttention-2 and -3, prompts and decode batches at head size 128) on the H100, the H200
#    and the SM-limited H100s.
# Writes data/models/report/transfer/*.txt and summary.csv; takes about 15 minutes on 2 cores.
# PARTS="fp8 gemm rmsnorm silu_mul attention" (the default: all) reruns only the parts named,
# keeping the other parts' lines of summary.csv.
set -euo pipefail
shopt -s nullglob  # a GPU without an op's measurements is left out of that op
cd "$(dirname "$0")/../.."
cli="${1:-build}/pipeweave"
archive="${2:-../shared/public-data/pipeweave-published.tar.xz}"
out=data/models/report/transfer
mkdir -p "$out"
parts=" ${PARTS:-fp8 gemm rmsnorm silu_mul attention} "
for part in $parts; do
  [[ " fp8 gemm rmsnorm silu_mul attention " == *" $part "* ]] ||
    { echo "$0: PARTS names $part; use fp8 gemm rmsnorm silu_mul attention" >&2; exit 2; }
done
part() { [[ $parts == *" $1 "* ]]; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The lines of the parts not rerun are kept (fp8's are the "published ..." ones); the parts rerun
# write theirs to $new, and summary.csv is rewritten only once every part has run.
header="trained_on,left_out,family,rows,mape_pct,roofline_mape_pct"
if [[ -f $out/summary.csv ]]; then
  awk -F, -v parts="$parts" 'NR > 1 {
    part = ($1 ~ /^published/) ? "fp8" : $3
    if (index(parts, " " part " ") == 0) print }' "$out/summary.csv" > "$tmp/kept.csv"
else
  : > "$tmp/kept.csv"
fi
new="$tmp/new.csv"
: > "$new"
rows="$tmp/gemm_fp8_train.csv"
if part fp8 || part gemm; then tar xJf "$archive" -C "$tmp" ./gemm_fp8_train.csv; fi
options=(--epochs 150 --patience 150 --lr 3e-3 --batch 128)
# The line eval prints for GPU $2 in file $1, as CSV: rows, MAPE, roofline MAPE.
summary() { awk -v gpu="$2" '$1 == gpu { print $2 "," $3 "," $9 }' "$1"; }

if part fp8; then
  "$cli" train --op gemm --data "$rows" "${options[@]}" --out "$tmp/fp8_both.json" 2> "$out/fp8_both.train.log"
  "$cli" eval --model "$tmp/fp8_both.json" --held-out --data "$rows" > "$out/fp8_both.txt"
  for gpu in H20 H800; do
    echo "published fp8 both,$gpu (held-out shapes),gemm,$(summary "$out/fp8_both.txt" "$gpu")" >> "$new"
  done
  for gpu in H20 H800; do
    "$cli" train --op gemm --data "$rows" "${options[@]}" --holdout-gpu "$gpu" --out "$tmp/fp8_without_$gpu.json" \
      2> "$out/fp8_without_$gpu.train.log"
    "$cli" eval --model "$tmp/fp8_without_$gpu.json" --held-out --data "$rows" > "$out/fp8_without_$gpu.txt"
    echo "published fp8 without $gpu,$gpu,gemm,$(summary "$out/fp8_without_$gpu.txt" "$gpu")" >> "$new"
  done
fi

# 2. Every GPU measured, one left out at a time. GEMM rows: cuBLAS's first choice per shape (one
# row per shape and GPU, as the published rows are), with the config it ran.
first_choices() {  # $1: a measurement CSV, plain or gzipped; writes its is_default rows to $2 (plain)
  zcat -f "$1" | awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == "is_default") c = i; print; next } $c == 1' > "$2"
}
gemm_files=(--data "$rows")
for gpu in H100-SXM H200-SXM; do
  first_choices "data/measurements/$gpu/gemm.csv.gz" "$tmp/$gpu-gemm.csv"
  gemm_files+=(--data "$tmp/$gpu-gemm.csv")
done
for f in data/measurements/H100-SXM-sm*/gemm-seed*.csv.gz; do
  name=$(basename "$(dirname "$f")")-$(basename "$f" .gz)
  first_choices "$f" "$tmp/$name"
  gemm_files+=(--data "$tmp/$name")
done
part gemm && for gpu in H100-SXM H200-SXM H100-SXM-sm16 H100-SXM-sm32 H100-SXM-sm64 H100-SXM-sm72 H20 H800; do
  echo "gemm: every GPU but $gpu" >&2
  "$cli" train --op gemm "${gemm_files[@]}" --specs data/gpus "${options[@]}" --holdout-gpu "$gpu" \
    --out "$tmp/gemm_without_$gpu.json" 2> "$out/gemm_without_$gpu.train.log"
  "$cli" eval --model "$tmp/gemm_without_$gpu.json" --held-out "${gemm_files[@]}" --specs data/gpus > "$out/gemm_without_$gpu.txt"
  echo "every other GPU,$gpu,gemm,$(summary "$out/gemm_without_$gpu.txt" "$gpu")" >> "$new"
done
for op in rmsnorm silu_mul; do
  part "$op" || continue
  files=() gpus=()
  for f in data/measurements/*/"$op".csv data/measurements/*/"$op".csv.gz; do
    files+=(--data "$f")
    gpus+=("$(basename "$(dirname "$f")")")
  done
  for gpu in "${gpus[@]}"; do
    echo "$op: every GPU but $gpu" >&2
    "$cli" train --op "$op" "${files[@]}" --specs data/gpus --epochs 150 --holdout-gpu "$gpu" \
      --out "$tmp/${op}_without_$gpu.json" 2> "$out/${op}_without_$gpu.train.log"
    "$cli" eval --model "$tmp/${op}_without_$gpu.json" --held-out "${files[@]}" --specs data/gpus > "$out/${op}_without_$gpu.txt"
    echo "every other GPU,$gpu,$op,$(summary "$out/${op}_without_$gpu.txt" "$gpu")" >> "$new"
  done
done
# Attention: FlashAttention-2 and -3 at head size 128, prompts and serving-context decode batches
# (the full GPUs' main lists; a seeded subset of both on the SM-limited H100s).
files=() gpus=()
for gpu in H100-SXM H200-SXM; do
  files+=(--data "data/measurements/$gpu/attention.csv.gz" --data "data/measurements/$gpu/attention_decode.csv.gz"
          --data "data/measurements/$gpu/attention_fa3.csv.gz" --data "data/measurements/$gpu/attention_decode_fa3.csv.gz")
  gpus+=("$gpu")
done
for f in data/measurements/H100-SXM-sm*/attention.csv.gz; do
  folder=$(dirname "$f")
  files+=(--data "$f" --data "$folder/attention_fa3.csv.gz")
  gpus+=("$(basename "$folder")")
done
part attention && for gpu in "${gpus[@]}"; do
  echo "attention: every GPU but $gpu" >&2
  "$cli" train --op attention "${files[@]}" --specs data/gpus --epochs 150 --holdout-gpu "$gpu" \
    --out "$tmp/attention_without_$gpu.json" 2> "$out/attention_without_$gpu.train.log"
  "$cli" eval --model "$tmp/attention_without_$gpu.json" --held-out "${files[@]}" --specs data/gpus > "$out/attention_without_$gpu.txt"
  echo "every other GPU,$gpu,attention,$(summary "$out/attention_without_$gpu.txt" "$gpu")" >> "$new"
done
{ echo "$header"; cat "$tmp/kept.csv" "$new"; } > "$out/summary.csv"
column -s, -t "$out/summary.csv"
