#!/usr/bin/env bash
# Expert parallelism, held out by model family (docs/experiments/fused-moe.md, "Expert parallelism"):
#   bash data/models/fused_moe_ep.sh [BUILD_DIR] [PYTHON]   (default: build, build-python/venv/bin/python)
# The recipe of fused_moe_both_gpus.sh (four networks with a ranking term, seed 1), trained on the
# rows of Mixtral-8x7B, Qwen1.5-MoE-A2.7B and Qwen3-30B-A3B from both GPUs (uniform and skewed
# routing) and on their expert-parallel rows (the H100's, EP 2, 4 and 8: <family>.ep.<routing>.csv.gz),
# scored on DeepSeek-V2-Lite and OLMoE-1B-7B: their expert-parallel rows (uniform, skewed), their
# rows without it on each GPU (as fused_moe_both_gpus.sh scores them), and the tuning result on their
# fully measured expert-parallel shapes; the bundled model (trained on no expert-parallel row) scored
# beside it on the expert-parallel rows and their tuning -> report/fused_moe/ep/. About 10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
cli="${1:-build}/pipeweave"
python="${2:-build-python/venv/bin/python}"
report=data/models/report/fused_moe/ep
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
    args+=(--data "$measured/H100-SXM/fused_moe/$family.ep.$routing.csv.gz")
  done
done
"$cli" train --op fused_moe "${args[@]}" --networks 4 --rank-weight 1 --seed 1 --out "$model" | tail -2 | tee "$report/train_holdout.txt"
held() {  # the held-out families' files of one GPU, kind (".ep" or "") and routing, as --data arguments
  for family in "${held_out[@]}"; do printf -- '--data\n%s\n' "$measured/$1/fused_moe/$family$2.$3.csv.gz"; done
}
for routing in uniform skewed; do
  mapfile -t data < <(held H100-SXM .ep "$routing")
  "$cli" eval --model "$model" "${data[@]}" --report "$work/trained.$routing" | grep -v "^wrote " | tee "$report/eval_H100-SXM.ep.$routing.txt"
  "$cli" eval "${data[@]}" --report "$work/bundled.$routing" | grep -v "^wrote " > "$report/eval_bundled_H100-SXM.ep.$routing.txt"
  # where the error sits: by ranks and token band
  python3 data/models/fused_moe_bands.py "$work/trained.$routing/eval.csv" > "$report/bands_H100-SXM.ep.$routing.txt"
  python3 data/models/fused_moe_bands.py "$work/bundled.$routing/eval.csv" > "$report/bands_bundled_H100-SXM.ep.$routing.txt"
  for gpu in H100-SXM H200-SXM; do
    mapfile -t data < <(held "$gpu" "" "$routing")
    "$cli" eval --model "$model" "${data[@]}" > "$report/eval_$gpu.$routing.txt"
  done
done
mapfile -t data < <(held H100-SXM .ep uniform)
"$python" data/models/fused_moe_tuning.py --model "$model" --gpu H100-SXM "${data[@]}" --csv "$report/tuning_H100-SXM.ep.csv" |
  tee "$report/tuning_H100-SXM.ep.txt"
"$python" data/models/fused_moe_tuning.py --model data/models/fused_moe.json --gpu H100-SXM "${data[@]}" \
  > "$report/tuning_bundled_H100-SXM.ep.txt"
