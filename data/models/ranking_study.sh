#!/usr/bin/env bash
# What moves the per-shape rank correlation of a shape's configs (issue: Spearman >= 0.9 on
# held-out shapes), each variant trained like the bundled GEMM model (train_all.sh's options,
# the same split) and scored with `eval --held-out --ranking`:
#   bash data/models/ranking_study.sh [BUILD_DIR [VARIANT...]]   (all: about 20 minutes on 2 cores)
# Variants: wide (512-256-128 layers); half_the_shapes (validation fraction 0.55, the same
# test shapes); ensemble4 (four MAPE networks, --networks 4); ranking_term_3 and
# ranking_term_10 (one network with --rank-weight 3 or 10). The ranking ensemble itself
# (--rank-weight 3 --networks 4) is trained by train_all.sh (report/gemm_rank3.ranking.json).
# Models go to a temporary directory; the ranking tables to data/models/report/ranking_study/.
set -euo pipefail
cd "$(dirname "$0")/../.."
cli="${1:-build}/pipeweave"
data=data/measurements
out=data/models/report/ranking_study
models=$(mktemp -d)
trap 'rm -r "$models"' EXIT
mkdir -p "$out"
files=(--data "$data/H100-SXM/gemm.csv.gz" --data "$data/H200-SXM/gemm.csv.gz" --specs data/gpus)
gemm_options=(--epochs 300 --patience 300 --lr 3e-3 --batch 512)
variant() {
  local name=$1
  shift
  "$cli" train --op gemm "${files[@]}" "${gemm_options[@]}" "$@" --out "$models/$name.json" 2> "$models/$name.log"
  "$cli" eval --model "$models/$name.json" --held-out --ranking "${files[@]}" > "$out/$name.txt"
  "$cli" eval --model "$models/$name.json" --held-out "${files[@]}" | tail -n 3 >> "$out/$name.txt"
  echo "== $name ($*)"
  cat "$out/$name.txt"
}
declare -A options=([wide]="--hidden 512,256,128" [half_the_shapes]="--validation-fraction 0.55"
                     [ensemble4]="--networks 4" [ranking_term_3]="--rank-weight 3" [ranking_term_10]="--rank-weight 10")
names=("${@:2}")
[[ ${#names[@]} -gt 0 ]] || names=(wide half_the_shapes ensemble4 ranking_term_3 ranking_term_10)
for name in "${names[@]}"; do
  [[ -n "${options[$name]:-}" ]] || { echo "ranking_study.sh: unknown variant $name (${!options[*]})" >&2; exit 2; }
  # shellcheck disable=SC2086  # the options are words
  variant "$name" ${options[$name]}
done
