#!/usr/bin/env bash
# GEMMs as served, on a fresh draw of shapes no model was trained on (docs/experiments/served-gemms.md, "A fresh draw"):
#   bash data/models/served_fresh.sh [BUILD_DIR] [EVAL_ARGS...]
# Scores the shape-only prediction (eval --without-configs; by default the bundled models, or
# the --model files given after BUILD_DIR) on each GPU's seed-4 served rows
# (data/measurements/<GPU>/gemm_served_seed4_{bf16,fp8}.csv.gz: collect_served.sh with SEED=4,
# the shapes seeds 1-3 had measured left out), all of them: new token counts of the 42 families'
# layers and 4,000 new random shapes. Prints, and writes to $OUT (default data/models/report/served/fresh)/<GPU>.*,
# eval's table and the per-family one (served_report.py, with bands of the measured time), and the shift of the shapes seeds 1-3
# had measured, measured again (served_shift.py: <GPU>.shift.txt). A minute on one core.
set -euo pipefail
cd "$(dirname "$0")/../.."
cli="${1:-build}/pipeweave"
shift || true
out=${OUT:-data/models/report/served/fresh}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for gpu in H100-SXM H200-SXM; do
  files=(data/measurements/$gpu/gemm_served_seed4_bf16.csv.gz data/measurements/$gpu/gemm_served_seed4_fp8.csv.gz)
  [[ -f ${files[0]} ]] || continue
  "$cli" eval --without-configs "$@" --data "${files[0]}" --data "${files[1]}" --specs data/gpus --report "$work/$gpu" \
    > "$out/$gpu.txt"
  python3 data/models/served_report.py "$work/$gpu/eval.csv" "${files[@]}" --csv "$out/$gpu.families.csv" --time-bands \
    >> "$out/$gpu.txt"
  cat "$out/$gpu.txt"
  # The shapes seeds 1-3 had measured, measured again: how far the fresh run sits from them.
  for dtype in bf16 fp8; do
    python3 data/models/served_shift.py "data/measurements/$gpu/gemm_served_seed4_repeats_$dtype.csv.gz" \
      "data/measurements/$gpu/gemm_served_$dtype.csv.gz"
  done | tee "$out/$gpu.shift.txt"
done
