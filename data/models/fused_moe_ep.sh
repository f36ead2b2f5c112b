#!/usr/bin/env bash
# Expert parallelism, held out by model family (docs/experiments/fused-moe.md, "Expert parallelism"):
#   bash data/models/fused_moe_ep.sh [BUILD_DIR] [PYTHON]   (default: build, build-python/venv/bin/python)
# The recipe of fused_moe_both_gpus.sh (four networks with a ranking term, seed 1), trained on the
# rows of Mixtral-8x7B, Qwen1.5-MoE-A2.7B and Qwen3-30B-A3B from both GPUs (uniform and skewed
# routing) and on their expert-parallel rows (EP 2, 4 and 8: <family>.ep.<routing>.csv.gz; the H100's, or
# those of the GPUs in EP_GPUS),
# scored on DeepSeek-V2-Lite and OLMoE-1B-7B on each GPU: their expert-parallel rows (uniform,
# skewed), their rows without it (as fused_moe_both_gpus.sh scores them), and the tuning result on
# their fully measured shapes with and without expert parallelism; a baseline scored beside it on the expert-parallel
# rows and their tuning (BASELINE, default the bundled model; the reports in report/fused_moe/ep/
# have the model bundled until 2026-11-27, which saw no expert-parallel row: `git show
# 24d26ee:data/models/fused_moe.json`; today's has seen every family's, so it is scored in-sample
# there) -> report/fused_moe/ep/ (or REPORT; ep/, ep_min8/ and ep_both_gpus/ predate the pick without
# expert parallelism, tuning_<gpu>.{csv,txt}).
# EP_MIN_TOKENS=N trains on the expert-parallel rows of at least N tokens only (default 1: all;
# rows_with_tokens.py says why). EXTRA_FAMILIES (space-separated) adds families measured without
# expert parallelism to the training rows (both GPUs, both routings; ep_more_families/ has the
# seven of seed 5 that are not DeepSeek's, the held-out family's lineage). TRAIN_FLAGS, the flags
# to train besides --seed 1 (default "--networks 4 --rank-weight 1", 256-128-64 networks as the
# reports before ep_wide/ were made; ep_wide/, the bundled recipe since 2026-11-28, has
# "--networks 4 --rank-weight 1 --hidden 512,256,128"; ep_wide_exact/ the same since skewed routing's chances are
# successive sampling's), needs REPORT as EXTRA_FAMILIES does.
# MODEL_OUT, if set, keeps the trained model there. About 7 minutes on 2 cores (with the seven families, 15; with them and 512-256-128 networks, about 50 alone, 59 beside another training).
set -euo pipefail
cd "$(dirname "$0")/../.."
cli="${1:-build}/pipeweave"
python="${2:-build-python/venv/bin/python}"
baseline=${BASELINE:-data/models/fused_moe.json.gz}
[[ -z "${EXTRA_FAMILIES:-}${TRAIN_FLAGS:-}" || -n "${REPORT:-}" ]] ||
  { echo "EXTRA_FAMILIES and TRAIN_FLAGS need REPORT (the default report is ep/)" >&2; exit 2; }
read -ra train_flags <<< "${TRAIN_FLAGS:---networks 4 --rank-weight 1}"
report=${REPORT:-data/models/report/fused_moe/ep}
read -r -a ep_gpus <<< "${EP_GPUS:-H100-SXM}"
min_tokens=${EP_MIN_TOKENS:-1}
[[ $min_tokens =~ ^[1-9][0-9]*$ ]] || { echo "EP_MIN_TOKENS must be a whole number of at least 1, got '$min_tokens'" >&2; exit 2; }
mkdir -p "$report"
measured=data/measurements
held_out=(DeepSeek-V2-Lite OLMoE-1B-7B)
model=$(mktemp --suffix=.json)
work=$(mktemp -d)
trap 'rm -rf "$model" "$work"' EXIT
args=()
for family in Mixtral-8x7B Qwen1.5-MoE-A2.7B Qwen3-30B-A3B; do
  for routing in uniform skewed; do
    for gpu in H100-SXM H200-SXM; do args+=(--data "$measured/$gpu/fused_moe/$family.$routing.csv.gz"); done
    for gpu in "${ep_gpus[@]}"; do
      ep_rows="$measured/$gpu/fused_moe/$family.ep.$routing.csv.gz"
      if (( min_tokens > 1 )); then
        python3 data/models/rows_with_tokens.py "$ep_rows" "$work/$gpu.$family.ep.$routing.csv.gz" "$min_tokens"
        ep_rows="$work/$gpu.$family.ep.$routing.csv.gz"
      fi
      args+=(--data "$ep_rows")
    done
  done
done
read -r -a extra_families <<< "${EXTRA_FAMILIES:-}"
named=(Mixtral-8x7B Qwen1.5-MoE-A2.7B Qwen3-30B-A3B "${held_out[@]}")
for family in "${extra_families[@]}"; do
  [[ " ${named[*]} " != *" $family "* ]] || { echo "$family is named twice (trained on or held out)" >&2; exit 2; }
  named+=("$family")
  for routing in uniform skewed; do
    for gpu in H100-SXM H200-SXM; do args+=(--data "$measured/$gpu/fused_moe/$family.$routing.csv.gz"); done
  done
done
"$cli" train --op fused_moe "${args[@]}" "${train_flags[@]}" --seed 1 --out "$model" | tail -2 | tee "$report/train_holdout.txt"
[[ -z "${MODEL_OUT:-}" ]] || cp "$model" "$MODEL_OUT"
held() {  # the held-out families' files of one GPU, kind (".ep" or "") and routing, as --data arguments
  for family in "${held_out[@]}"; do printf -- '--data\n%s\n' "$measured/$1/fused_moe/$family$2.$3.csv.gz"; done
}
for gpu in H100-SXM H200-SXM; do
  for routing in uniform skewed; do
    mapfile -t data < <(held "$gpu" .ep "$routing")
    "$cli" eval --model "$model" "${data[@]}" --report "$work/trained.$routing" | grep -v "^wrote " | tee "$report/eval_$gpu.ep.$routing.txt"
    "$cli" eval --model "$baseline" "${data[@]}" --report "$work/bundled.$routing" | grep -v "^wrote " > "$report/eval_bundled_$gpu.ep.$routing.txt"
    # where the error sits: by ranks and token band
    python3 data/models/fused_moe_bands.py "$work/trained.$routing/eval.csv" > "$report/bands_$gpu.ep.$routing.txt"
    python3 data/models/fused_moe_bands.py "$work/bundled.$routing/eval.csv" > "$report/bands_bundled_$gpu.ep.$routing.txt"
    mapfile -t data < <(held "$gpu" "" "$routing")
    "$cli" eval --model "$model" "${data[@]}" > "$report/eval_$gpu.$routing.txt"
  done
  # the pick on the fully measured shapes without expert parallelism, as fused_moe_both_gpus.sh scores it
  mapfile -t data < <(held "$gpu" "" uniform)
  "$python" data/models/fused_moe_tuning.py --model "$model" --gpu "$gpu" "${data[@]}" --csv "$report/tuning_$gpu.csv" > "$report/tuning_$gpu.txt"
  mapfile -t data < <(held "$gpu" .ep uniform)
  "$python" data/models/fused_moe_tuning.py --model "$model" --gpu "$gpu" "${data[@]}" --csv "$report/tuning_$gpu.ep.csv" |
    tee "$report/tuning_$gpu.ep.txt"
  "$python" data/models/fused_moe_tuning.py --model "$baseline" --gpu "$gpu" "${data[@]}" \
    > "$report/tuning_bundled_$gpu.ep.txt"
done
