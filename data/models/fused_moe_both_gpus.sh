#!/usr/bin/env bash
# The fused-MoE model held out by family, trained on the H100's and the H200's rows together
# (docs/experiments/fused-moe.md, "Both GPUs"):
#   bash data/models/fused_moe_both_gpus.sh [BUILD_DIR] [PYTHON]   (default: build, build-python/venv/bin/python)
# The same recipe as fused_moe.sh's step 1 (four networks with a ranking term, seed 1), trained on
# the rows of Mixtral-8x7B, Qwen1.5-MoE-A2.7B and Qwen3-30B-A3B from both GPUs, uniform and skewed
# routing (the rows' zipf column: the op takes the routing's skew), scored on DeepSeek-V2-Lite and
# OLMoE-1B-7B on each GPU (uniform and skewed routing), and the tuning result on each GPU's fully
# measured held-out shapes -> report/fused_moe/both_gpus/. About 5 minutes on 2 cores.
# The bundled model (fused_moe.json.gz, fused_moe.sh step 3) is this recipe on all thirteen families.
# Optional environment: TRAIN_FLAGS, the flags to train besides --seed 1 (default "--networks 4
# --rank-weight 1": 256-128-64 networks, as the committed reports were made; the bundled recipe has
# had "--hidden 512,256,128" since 2026-11-28), and REPORT, the report folder (default data/models/report/fused_moe/both_gpus);
# fused_moe_variants.sh chooses the flags on the training families alone. TRAIN_FAMILIES and
# HELD_OUT (space-separated family names) replace the three training and the two held-out families;
# MODEL_OUT, if set, keeps the trained model there.
set -euo pipefail
cd "$(dirname "$0")/../.."
cli="${1:-build}/pipeweave"
python="${2:-build-python/venv/bin/python}"
report="${REPORT:-data/models/report/fused_moe/both_gpus}"
read -ra train_flags <<< "${TRAIN_FLAGS:---networks 4 --rank-weight 1}"
mkdir -p "$report"
gpus=(H100-SXM H200-SXM)
if [[ -n "${TRAIN_FAMILIES:-}${HELD_OUT:-}" && -z "${REPORT:-}" ]]; then
  echo "TRAIN_FAMILIES and HELD_OUT need REPORT (the default report is the three families' split)" >&2
  exit 2
fi
read -ra train_families <<< "${TRAIN_FAMILIES:-Mixtral-8x7B Qwen1.5-MoE-A2.7B Qwen3-30B-A3B}"
read -ra held_out <<< "${HELD_OUT:-DeepSeek-V2-Lite OLMoE-1B-7B}"
named=()
for family in "${train_families[@]}" "${held_out[@]}"; do
  [[ " ${named[*]} " != *" $family "* ]] || { echo "$family is named twice (trained on or held out)" >&2; exit 2; }
  named+=("$family")
done
model=$(mktemp --suffix=.json)
trap 'rm -f "$model"' EXIT
args=()
for gpu in "${gpus[@]}"; do
  for family in "${train_families[@]}"; do
    for routing in uniform skewed; do args+=(--data "data/measurements/$gpu/fused_moe/$family.$routing.csv.gz"); done
  done
done
"$cli" train --op fused_moe "${args[@]}" "${train_flags[@]}" --seed 1 --out "$model" | tail -2 | tee "$report/train_holdout.txt"
[[ -z "${MODEL_OUT:-}" ]] || cp "$model" "$MODEL_OUT"
held() {  # the held-out families' files of one GPU and routing, as --data arguments
  for family in "${held_out[@]}"; do printf -- '--data\n%s\n' "data/measurements/$1/fused_moe/$family.$2.csv.gz"; done
}
for gpu in "${gpus[@]}"; do
  for routing in uniform skewed; do
    mapfile -t data < <(held "$gpu" "$routing")
    "$cli" eval --model "$model" "${data[@]}" | tee "$report/eval_$gpu.$routing.txt"
  done
  mapfile -t data < <(held "$gpu" uniform)
  "$python" data/models/fused_moe_tuning.py --model "$model" --gpu "$gpu" "${data[@]}" --csv "$report/tuning_$gpu.csv" |
    tee "$report/tuning_$gpu.txt"
done
