#!/usr/bin/env bash
# Measures the attention shape lists of data/shapes/ on the GPU in hand, in one device call:
#
#   bash cuda_kernels/collect_attention_lists.sh OUT_DIR [fa2] [fa3-main] [fa3-lists] [fa3-heads] [fa3-contiguous] [long-decode]
#
#   fa2        FlashAttention-2 (PyTorch) on the head-size-64 and -256 lists and the main job's rows
#   fa3-main   FlashAttention-3 on the main job's rows (examples/llama3_8b_layer: a 4 x 2048 prompt
#              batch, 64 decode sequences over 2048 tokens), contiguous and 1-token-paged cache
#   fa3-lists  FlashAttention-3 on the head-size-128 lists as the H100's were measured: prompts,
#              and the serving-context decode batches over 1-token (SGLang) and 16-token (vLLM) pages
#   fa3-heads  FlashAttention-3 on the head-size-64 and -256 lists, likewise (built for 64, 128, 256)
#   long-decode  both implementations on large decode batches over long contexts (FlashAttention-3
#              over caches of page size 0, 1 and 16)
#   fa3-contiguous  FlashAttention-3 on the serving-context decode lists of every head size over a
#              contiguous cache (page size 0: what Attention::decode() describes by default)
#
# FlashAttention-3 is built first (cuda_kernels/build_fa3.sh, into /root/fa3 or, with every head
# size, /root/fa3-heads; kept while the machine is warm). Each list writes OUT_DIR/<name>.jsonl.gz (raw records: pipeweave collect
# --from-raw) and its progress to OUT_DIR/<name>.log.
set -euo pipefail
out=${1:?usage: collect_attention_lists.sh OUT_DIR PART... (fa2 fa3-main fa3-lists fa3-heads fa3-contiguous long-decode)}
shift
mkdir -p "$out"
out=$(realpath "$out")  # before the cd below: a relative OUT_DIR is the caller's
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$out/device.txt"

measure() {  # name, then collect_attention.py's arguments
  local name=$1
  shift
  local start=$SECONDS
  python3 cuda_kernels/collect_attention.py "$@" --out "/tmp/$name.jsonl" 2> "$out/$name.log"
  gzip -c "/tmp/$name.jsonl" > "$out/$name.jsonl.gz"
  echo "$name: $(($(wc -l < "/tmp/$name.jsonl") - 1)) rows in $((SECONDS - start)) s" | tee -a "$out/collect.txt"
}

for part in "$@"; do
  case $part in
    fa2)
      for list in attention_hd64 attention_decode_hd64 attention_hd256 attention_decode_hd256 attention_main_job; do
        measure "fa2_$list" --shapes "data/shapes/$list.csv"
      done
      ;;
    fa3-heads | fa3-contiguous)
      start=$SECONDS
      sources=../shared/vendor/flash-attention-hopper-src.tar.xz
      [[ -f $sources ]] || sources=.vendor/flash-attention-hopper-src.tar.xz
      HDIMS="64 128 256" bash cuda_kernels/build_fa3.sh "$sources" /root/fa3-heads
      echo "build_fa3 (head sizes 64, 128, 256): $((SECONDS - start)) s" | tee -a "$out/collect.txt"
      fa3=(--impl flash3 --fa3-path /root/fa3-heads/hopper)
      if [[ $part == fa3-contiguous ]]; then  # decode over a contiguous cache (page size 0), every head size
        measure fa3_decode_p0 "${fa3[@]}" --shapes data/shapes/attention_decode.csv --page-size 0
        for hd in 64 256; do
          measure "fa3_decode_hd${hd}_p0" "${fa3[@]}" --shapes "data/shapes/attention_decode_hd$hd.csv" --page-size 0
        done
        continue
      fi
      for hd in 64 256; do
        measure "fa3_attention_hd${hd}_p1" "${fa3[@]}" --shapes "data/shapes/attention_hd$hd.csv" --page-size 1
        measure "fa3_decode_hd${hd}_p1" "${fa3[@]}" --shapes "data/shapes/attention_decode_hd$hd.csv" --page-size 1
        measure "fa3_decode_hd${hd}_p16" "${fa3[@]}" --shapes "data/shapes/attention_decode_hd$hd.csv" --page-size 16
      done
      ;;
    long-decode)  # large decode batches over long contexts (data/shapes/attention_decode_long.csv)
      measure fa2_decode_long --shapes data/shapes/attention_decode_long.csv
      start=$SECONDS
      sources=../shared/vendor/flash-attention-hopper-src.tar.xz
      [[ -f $sources ]] || sources=.vendor/flash-attention-hopper-src.tar.xz
      bash cuda_kernels/build_fa3.sh "$sources" /root/fa3
      echo "build_fa3: $((SECONDS - start)) s" | tee -a "$out/collect.txt"
      for page in 0 1 16; do
        measure "fa3_decode_long_p$page" --impl flash3 --fa3-path /root/fa3/hopper --shapes data/shapes/attention_decode_long.csv \
          --page-size $page
      done
      ;;
    fa3-main | fa3-lists)
      start=$SECONDS
      # ../shared/vendor/ beside a checkout; on the device, a copy carried in .vendor/
      sources=../shared/vendor/flash-attention-hopper-src.tar.xz
      [[ -f $sources ]] || sources=.vendor/flash-attention-hopper-src.tar.xz
      bash cuda_kernels/build_fa3.sh "$sources" /root/fa3
      echo "build_fa3: $((SECONDS - start)) s" | tee -a "$out/collect.txt"
      fa3=(--impl flash3 --fa3-path /root/fa3/hopper)
      if [[ $part == fa3-main ]]; then
        measure fa3_main_job_p0 "${fa3[@]}" --shapes data/shapes/attention_main_job.csv --page-size 0
        measure fa3_main_job_p1 "${fa3[@]}" --shapes data/shapes/attention_main_job.csv --page-size 1
      else
        measure fa3_attention_p1 "${fa3[@]}" --shapes data/shapes/attention.csv --page-size 1
        measure fa3_decode_p1 "${fa3[@]}" --shapes data/shapes/attention_decode.csv --page-size 1
        measure fa3_decode_p16 "${fa3[@]}" --shapes data/shapes/attention_decode.csv --page-size 16
      fi
      ;;
    *)
      echo "collect_attention_lists: unknown part $part (fa2, fa3-main, fa3-lists, fa3-heads, fa3-contiguous, long-decode)" >&2
      exit 2
      ;;
  esac
done
