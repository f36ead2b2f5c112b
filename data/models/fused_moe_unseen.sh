#!/usr/bin/env bash
# A fused-MoE model scored on the eight families measured on 2026-11-27 (seed 5), per GPU, routing
# and family (docs/experiments/fused-moe.md, "Eight more families"):
#   bash data/models/fused_moe_unseen.sh MODEL.json REPORT_DIR [BUILD_DIR]
# The model bundled before them (`git show 39d75ab:data/models/fused_moe.json`, five families)
# never saw any of them: report/fused_moe/unseen_by_five_families/.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: bash data/models/fused_moe_unseen.sh MODEL.json REPORT_DIR [BUILD_DIR]" >&2; exit 2; }
# (paths as given, from where the script was called; the data from the repository's root)
model=$(realpath "$1") report=$(realpath -m "$2") build=$(realpath -m "${3:-build}")
cd "$(dirname "$0")/../.."
cli="$build/pipeweave"
families=(Mixtral-8x22B Qwen2-57B-A14B Phi-3.5-MoE DeepSeek-V2 Qwen3-235B-A22B Granite-3.0-3B-A800M DBRX Llama-4-Scout-17B-16E)
mkdir -p "$report"
for gpu in H100-SXM H200-SXM; do
  for routing in uniform skewed; do
    data=()
    for family in "${families[@]}"; do data+=(--data "data/measurements/$gpu/fused_moe/$family.$routing.csv.gz"); done
    "$cli" eval --model "$model" "${data[@]}" | tee "$report/eval_$gpu.$routing.txt"
    for family in "${families[@]}"; do
      printf '%-24s ' "$family"
      "$cli" eval --model "$model" --data "data/measurements/$gpu/fused_moe/$family.$routing.csv.gz" | awk '/^overall/ {print $3, $9}'
    done | sed '1i family                   MAPE% roofline_MAPE%' > "$report/families_$gpu.$routing.txt"
  done
done
