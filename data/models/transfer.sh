#!/usr/bin/env bash
# How the models transfer to GPUs they were not trained on (data/README.md, "Transfer"):
#   bash data/models/transfer.sh [BUILD_DIR [ARCHIVE]]
# 1. The published fp8 training split (H20 and H800; ARCHIVE defaults to
#    ../shared/public-data/pipeweave-published.tar.xz), read as published (the tile the published
#    method assumes, timed back to back): trained on both and scored on the held-out shapes; then
#    trained with each GPU left out and scored on it, beside the roofline.
# 2. Leave one GPU out, per op family, over every GPU measured: GEMMs (cuBLAS's first choice with
#    the config it ran) on the H100, the H200, the four SM-limited H100s and the published H20 and
#    H800 rows; RMSNorm and SiLU-mul on the H100, the H200 and the SM-limited H100s where measured;
#    each GPU left out of training in turn and scored on its held-out shapes.
# Writes data/models/report/transfer/*.txt and summary.csv; takes about 15 minutes on 2 cores.
set -euo pipefail
shopt -s nullglob  # a GPU without an op's measurements is left out of that op
cd "$(dirname "$0")/../.."
cli="${1:-build}/pipeweave"
archive="${2:-../shared/public-data/pipeweave-published.tar.xz}"
out=data/models/report/transfer
mkdir -p "$out"
rm -f "$out"/*.txt "$out"/*.log "$out"/summary.csv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar xJf "$archive" -C "$tmp" ./gemm_fp8_train.csv
rows="$tmp/gemm_fp8_train.csv"
options=(--epochs 150 --patience 150 --lr 3e-3 --batch 128)
echo "trained_on,left_out,family,rows,mape_pct,roofline_mape_pct" > "$out/summary.csv"
# The line eval prints for GPU $2 in file $1, as CSV: rows, MAPE, roofline MAPE.
summary() { awk -v gpu="$2" '$1 == gpu { print $2 "," $3 "," $9 }' "$1"; }

"$cli" train --op gemm --data "$rows" "${options[@]}" --out "$tmp/fp8_both.json" 2> "$out/fp8_both.train.log"
"$cli" eval --model "$tmp/fp8_both.json" --held-out --data "$rows" > "$out/fp8_both.txt"
for gpu in H20 H800; do
  echo "published fp8 both,$gpu (held-out shapes),gemm,$(summary "$out/fp8_both.txt" "$gpu")" >> "$out/summary.csv"
done
for gpu in H20 H800; do
  "$cli" train --op gemm --data "$rows" "${options[@]}" --holdout-gpu "$gpu" --out "$tmp/fp8_without_$gpu.json" \
    2> "$out/fp8_without_$gpu.train.log"
  "$cli" eval --model "$tmp/fp8_without_$gpu.json" --held-out --data "$rows" > "$out/fp8_without_$gpu.txt"
  echo "published fp8 without $gpu,$gpu,gemm,$(summary "$out/fp8_without_$gpu.txt" "$gpu")" >> "$out/summary.csv"
done

# 2. Every GPU measured, one left out at a time. GEMM rows: cuBLAS's first choice per shape (one
# row per shape and GPU, as the published rows are), with the config it ran.
first_choices() {  # $1: a measurement CSV; writes its is_default rows to $2
  awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == "is_default") c = i; print; next } $c == 1' "$1" > "$2"
}
gemm_files=(--data "$rows")
for gpu in H100-SXM H200-SXM; do
  first_choices "data/measurements/$gpu/gemm.csv" "$tmp/$gpu-gemm.csv"
  gemm_files+=(--data "$tmp/$gpu-gemm.csv")
done
for f in data/measurements/H100-SXM-sm*/gemm-seed*.csv; do
  name=$(basename "$(dirname "$f")")-$(basename "$f")
  first_choices "$f" "$tmp/$name"
  gemm_files+=(--data "$tmp/$name")
done
for gpu in H100-SXM H200-SXM H100-SXM-sm16 H100-SXM-sm32 H100-SXM-sm64 H100-SXM-sm72 H20 H800; do
  echo "gemm: every GPU but $gpu" >&2
  "$cli" train --op gemm "${gemm_files[@]}" --specs data/gpus "${options[@]}" --holdout-gpu "$gpu" \
    --out "$tmp/gemm_without_$gpu.json" 2> "$out/gemm_without_$gpu.train.log"
  "$cli" eval --model "$tmp/gemm_without_$gpu.json" --held-out "${gemm_files[@]}" --specs data/gpus > "$out/gemm_without_$gpu.txt"
  echo "every other GPU,$gpu,gemm,$(summary "$out/gemm_without_$gpu.txt" "$gpu")" >> "$out/summary.csv"
done
for op in rmsnorm silu_mul; do
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
    echo "every other GPU,$gpu,$op,$(summary "$out/${op}_without_$gpu.txt" "$gpu")" >> "$out/summary.csv"
  done
done
column -s, -t "$out/summary.csv"
