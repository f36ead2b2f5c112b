# Sourced by served.sh, served_both_gpus.sh and served_all.sh (with cli set). Defines
#   train_served MODEL_PATH LOG_DIR BF16_TYPES FP8_TYPES DATA_ARGS...
# which trains the networks for GEMMs without a config on served rows (recorded as such: --protocol
# served; one per data type, side by
# side a core each; the bundled GEMM model choosing the configs; 160 epochs), answering for the
# --dtypes lists given; the logs in LOG_DIR/train_{bf16,fp8}.log. In MODEL_PATH and the DATA_ARGS,
# {dtype} stands for bf16 or fp8. NETWORKS=N in the environment trains each as an ensemble of N
# networks (train --networks; default 1); HIDDEN=W1,W2,W3 the hidden layers' widths (train --hidden;
# default the trainer's 256,128,64); CONFIG_PICK=analytical_default the networks reading the
# analytical default config's demand (train --config-pick) instead of the bundled GEMM model's pick;
# SERVED_DTYPES="bf16" (or "fp8") trains that one alone.
train_served() {
  local models=$1 logs=$2 bf16_types=$3 fp8_types=$4
  shift 4
  local pids=() dtype types
  local hidden=() pick=(--chooser data/models/gemm.json)
  [[ -z ${HIDDEN:-} ]] || hidden=(--hidden "$HIDDEN")
  [[ -z ${CONFIG_PICK:-} ]] || pick=(--config-pick "$CONFIG_PICK")
  for dtype in ${SERVED_DTYPES:-bf16 fp8}; do
    types=$bf16_types
    [[ $dtype == fp8 ]] && types=$fp8_types
    "$cli" train --op gemm --without-configs --dtypes "$types" "${pick[@]}" "${@//\{dtype\}/$dtype}" \
      --specs data/gpus --epochs 160 --patience 160 --lr 3e-3 --batch 512 --networks "${NETWORKS:-1}" "${hidden[@]}" --protocol served \
      --out "${models//\{dtype\}/$dtype}" 2> "$logs/train_$dtype.log" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do  # a bare wait would not fail with a failed training; the other one stops too
    wait "$pid" || { kill "${pids[@]}" 2>/dev/null; return 1; }
  done
}
