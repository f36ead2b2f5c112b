#!/usr/bin/env bash
# GEMMs as served, on a fresh draw of shapes no model was trained on (docs/experiments/served-gemms.md, "A fresh draw"):
#   bash data/models/served_fresh.sh [BUILD_DIR] [EVAL_ARGS...]
# Scores the shape-only prediction (eval --without-configs; by default the bundled models, or
# the --model files given after BUILD_DIR) on each fresh draw of each GPU, seeds 4, 5, 9-13 and
# 14_quarter where the GPU has it (SEEDS="..." scores those alone; data/measurements/<GPU>/gemm_served_seedS_{bf16,fp8}.csv.gz:
# collect_served.sh with that SEED in a later device session, the shapes seeds 1-3 had measured left
# out; seeds 9-14 the H200's alone, device sessions of 2026-11-29, after every bundled model was
# fitted), all of their rows: new token counts of the 42 families' layers and 4,000 new random shapes
# (seeds 11-13: one token count a layer and 100 random shapes, 980 a type, collected in 5 s; seed 14:
# a quarter of its shapes, served_to_measurements.py --keep-share 4). Prints, and
# writes to $OUT (default data/models/report/served/fresh)/<GPU>.* (seed 4) and <GPU>.seedS.* (the others),
# eval's table and the per-family one (served_report.py, with bands of the measured time and the spread), and the
# shift of the shapes seeds 1-3 had measured, measured again (served_shift.py: <GPU>.shift.txt,
# <GPU>.seedS.shift.txt). A minute a draw on one core.
set -euo pipefail
cd "$(dirname "$0")/../.."
cli="${1:-build}/pipeweave"
shift || true
out=${OUT:-data/models/report/served/fresh}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for gpu in H100-SXM H200-SXM; do
  for seed in ${SEEDS:-4 5 9 10 11 12 13 14_quarter}; do
    files=(data/measurements/$gpu/gemm_served_seed${seed}_bf16.csv.gz data/measurements/$gpu/gemm_served_seed${seed}_fp8.csv.gz)
    [[ -f ${files[0]} ]] || continue
    name=$gpu
    [[ $seed == 4 ]] || name=$gpu.seed$seed  # seed 4's reports keep the names they had before seed 5
    "$cli" eval --without-configs "$@" --data "${files[0]}" --data "${files[1]}" --specs data/gpus --report "$work/$name" \
      | grep -v '^wrote ' > "$out/$name.txt"  # not the temporary folder's name: a report rerun is the same
    python3 data/models/served_report.py "$work/$name/eval.csv" "${files[@]}" --csv "$out/$name.families.csv" --time-bands --spread \
      >> "$out/$name.txt"
    cat "$out/$name.txt"
    # The shapes seeds 1-3 had measured, measured again: how far the fresh run sits from them.
    for dtype in bf16 fp8; do
      python3 data/models/served_shift.py "data/measurements/$gpu/gemm_served_seed${seed}_repeats_$dtype.csv.gz" \
        "data/measurements/$gpu/gemm_served_$dtype.csv.gz"
    done | tee "$out/$name.shift.txt"
  done
done
