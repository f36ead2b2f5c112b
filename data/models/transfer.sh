#!/usr/bin/env bash
# How the GEMM models transfer to GPUs they were not trained on (data/README.md, "Transfer"):
#   bash data/models/transfer.sh [BUILD_DIR [ARCHIVE]]
# 1. The published fp8 training split (H20 and H800, shapes only; ARCHIVE defaults to
#    ../shared/public-data/pipeweave-published.tar.xz): trained on both and scored on the held-out
#    shapes; then trained with each GPU left out and scored on it, beside the roofline.
# 2. The bundled GEMM model on the H100 confined to 16, 32, 64 and 72 SMs (never trained on).
# 3. The H20 left out again, the H800's rows trained on together with the SM-limited H100s'
#    (bf16, cuBLAS's first choices): other balances from the GPU at hand.
# Writes data/models/report/transfer/*.txt; takes about 3 minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
cli="${1:-build}/pipeweave"
archive="${2:-../shared/public-data/pipeweave-published.tar.xz}"
out=data/models/report/transfer
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar xJf "$archive" -C "$tmp" ./gemm_fp8_train.csv
rows="$tmp/gemm_fp8_train.csv"
options=(--epochs 150 --patience 150 --lr 3e-3 --batch 128)
"$cli" train --op gemm --data "$rows" "${options[@]}" --out "$tmp/fp8_both.json" 2> "$out/fp8_both.train.log"
"$cli" eval --model "$tmp/fp8_both.json" --held-out --data "$rows" > "$out/fp8_both.txt"
for gpu in H20 H800; do
  "$cli" train --op gemm --data "$rows" "${options[@]}" --holdout-gpu "$gpu" --out "$tmp/fp8_without_$gpu.json" \
    2> "$out/fp8_without_$gpu.train.log"
  "$cli" eval --model "$tmp/fp8_without_$gpu.json" --held-out --data "$rows" > "$out/fp8_without_$gpu.txt"
done
for n in 16 32 64 72; do
  files=()
  for f in data/measurements/H100-SXM-sm$n/gemm-seed*.csv; do files+=(--data "$f"); done
  "$cli" eval "${files[@]}" --specs data/gpus > "$out/bundled_on_sm$n.txt"
done
sm_rows=()
for n in 16 32 64 72; do for f in data/measurements/H100-SXM-sm$n/gemm-seed*.csv; do sm_rows+=(--data "$f"); done; done
"$cli" train --op gemm --data "$rows" "${sm_rows[@]}" --without-configs --specs data/gpus "${options[@]}" --holdout-gpu H20 \
  --out "$tmp/fp8_without_H20_with_sm.json" 2> "$out/fp8_without_H20_with_sm.train.log"
"$cli" eval --model "$tmp/fp8_without_H20_with_sm.json" --held-out --data "$rows" > "$out/fp8_without_H20_with_sm.txt"
for f in "$out"/*.txt; do echo "== $f"; grep -E "^(H|overall)" "$f"; done
