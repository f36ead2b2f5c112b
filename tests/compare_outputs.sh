#!/usr/bin/env bash
# Runs two builds of the CLI over the same questions and reports every answer that differs: for
# a change that must not change behaviour (a refactor). The questions: eval of every committed
# measurement CSV (and the default-config, configless and ranking scorings), e2e of the committed
# workloads on three GPUs and two engines and of traces through the scheduler, predict and rank
# of each op family, calibrate from the committed logs, short seeded training runs, and a few
# bad inputs (the error must read the same).
#   bash tests/compare_outputs.sh OLD_PIPEWEAVE NEW_PIPEWEAVE
# e.g. git worktree add /tmp/old HEAD~1 && cmake -S /tmp/old -B /tmp/old/build && make -C /tmp/old/build pipeweave_cli
#      bash tests/compare_outputs.sh /tmp/old/build/pipeweave build/pipeweave
set -uo pipefail
cd "$(dirname "$0")/.."
[[ $# -eq 2 ]] || { echo "usage: bash tests/compare_outputs.sh OLD_PIPEWEAVE NEW_PIPEWEAVE" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Writes each answer of binary $1 under folder $2 (stdout, stderr and the exit status together).
ask() {
  local B="$1" O="$2"
  mkdir -p "$O"
  local i=0 f w g d
  for f in $(find data/measurements -maxdepth 2 -name "*.csv*" | sort) tests/data/eval_gemm_candidates.csv \
           tests/data/eval_silu_mul.csv tests/data/served_fp8_sample.csv; do
    i=$((i + 1))
    "$B" eval --data "$f" --specs data/gpus --json > "$O/eval_$i.txt" 2>&1; echo "rc=$?" >> "$O/eval_$i.txt"
  done
  "$B" eval --data data/measurements/H100-SXM/gemm.csv.gz --without-configs --json > "$O/eval_configless.txt" 2>&1
  "$B" eval --data data/measurements/H100-SXM/gemm.csv.gz --default-configs --json > "$O/eval_default.txt" 2>&1
  "$B" eval --data data/measurements/H100-SXM/gemm.csv.gz --ranking --json > "$O/eval_ranking.txt" 2>&1
  i=0
  for w in data/e2e/workload_llama8b_48.json data/e2e/workload_llama8b_48_tp2.json tests/data/workload_llama_tp2.json \
           tests/data/published/*.json; do
    i=$((i + 1))
    for g in H100-SXM H200-SXM A100-SXM4-80GB; do "$B" e2e --gpu "$g" --workload "$w" --json > "$O/e2e_${i}_$g.txt" 2>&1; done
    "$B" e2e --gpu H100-SXM --workload "$w" --engine vllm --json > "$O/e2e_${i}_vllm.txt" 2>&1
  done
  "$B" e2e --gpu H100-SXM --model data/e2e/Llama-3.1-8B/config.json --trace data/e2e/trace_48.csv --json > "$O/e2e_trace.txt" 2>&1
  "$B" e2e --gpu H100-SXM --model data/e2e/Llama-3.1-8B/config.json --trace tests/data/trace_small.csv --tp 2 \
       --no-chunked-prefill --json > "$O/e2e_trace_tp2.txt" 2>&1
  "$B" e2e --gpu H100-SXM --model tests/data/models/Mixtral-8x7B/config.json --trace tests/data/trace_small.csv --tp 2 \
       --json > "$O/e2e_trace_moe.txt" 2>&1
  for g in H100-SXM H200-SXM A100-SXM4-80GB; do
    "$B" predict --gpu "$g" --json gemm:m=4096,n=4096,k=4096,dtype=bf16 gemm:m=1,n=14336,k=4096,dtype=fp8_e4m3 \
         gemm:m=77,n=3000,k=512,dtype=bf16 gemm:m=3,n=5000,k=70000,dtype=fp8_e4m3 \
         gemm:m=4096,n=4096,k=4096,dtype=bf16,tile_m=128,tile_n=128,tile_k=64,split_k=1,stages=6,cluster_m=2,cluster_n=1 \
         attention:batch=8,q_len=2048,heads=32,kv_heads=8,head_dim=128 \
         attention:q_lens=512/1/1,kv_lens=512/4096/900,heads=32,kv_heads=8,head_dim=128 \
         fused_moe:tokens=512,experts=8,top_k=2,hidden=4096,intermediate=14336 \
         fused_moe:tokens=3,experts=64,top_k=8,hidden=2048,intermediate=768 all_reduce:bytes=16777216,ranks=8 \
         rmsnorm:tokens=8192,hidden=4096,dtype=bf16,fused_residual=1 silu_mul:tokens=3,dim=2048 > "$O/predict_$g.txt" 2>&1
    "$B" rank --gpu "$g" --json gemm:m=512,n=4096,k=4096,dtype=bf16 > "$O/rank_$g.txt" 2>&1
    "$B" rank --gpu "$g" --json --top 0 fused_moe:tokens=64,experts=8,top_k=2,hidden=4096,intermediate=14336 > "$O/rank_moe_$g.txt" 2>&1
  done
  for d in data/gpus/*.calibration; do
    "$B" calibrate $(for f in "$d"/microbench-*.json; do echo --from-log "$f"; done) --json > "$O/calibrate_$(basename "$d").txt" 2>&1
  done
  "$B" calibrate --from-log tests/data/microbench_synthetic.json --link tests/data/allreduce_synthetic.csv --json > "$O/calibrate_link.txt" 2>&1
  "$B" train --op silu_mul --data tests/data/train_sample_silu_mul.csv --out "$O/model_silu.json" --epochs 2 --seed 7 > "$O/train_silu.txt" 2>&1
  "$B" train --op rmsnorm --data data/measurements/H100-SXM/rmsnorm.csv.gz --out "$O/model_rms.json" --epochs 2 --seed 3 \
       --hidden 32,16 --networks 2 > "$O/train_rms.txt" 2>&1
  sort -o "$O/train_rms.txt" "$O/train_rms.txt"  # an ensemble's networks train side by side: their lines interleave
  "$B" train --op silu_mul --data tests/data/train_sample_silu_mul.csv --init "$O/model_silu.json" --out "$O/model_tuned.json" \
       --epochs 2 --seed 5 > "$O/train_tuned.txt" 2>&1
  printf 'num_prefill_tokens,num_decode_tokens,output_tokens\n5,1,2\n7,-1,0\n' > "$O/bad_trace.csv"
  "$B" e2e --gpu H100-SXM --model data/e2e/Llama-3.1-8B/config.json --trace "$O/bad_trace.csv" > "$O/error_trace.txt" 2>&1
  printf 'gpu,dtype,tokens,dim,threads,duration_us\nH100-SXM,bf16,3,2048\n' > "$O/bad_rows.csv"
  "$B" eval --data "$O/bad_rows.csv" > "$O/error_rows.txt" 2>&1
  "$B" predict --gpu H100-SXM gemm:m=-5,n=1,k=1 > "$O/error_kernel.txt" 2>&1
}

echo "compare_outputs: asking $1" >&2
ask "$1" "$work/old"
echo "compare_outputs: asking $2" >&2
ask "$2" "$work/new"
total=0 differ=0
for answer in $(cd "$work/old" && ls); do
  total=$((total + 1))
  # Paths of the two runs' own files (trained models record --out and the command) read alike.
  if ! cmp -s <(sed "s#$work/old#OUT#g" "$work/old/$answer") <(sed "s#$work/new#OUT#g" "$work/new/$answer"); then
    differ=$((differ + 1))
    echo "differs: $answer"
    diff <(sed "s#$work/old#OUT#g" "$work/old/$answer") <(sed "s#$work/new#OUT#g" "$work/new/$answer") | head -6
  fi
done
echo "compare_outputs: $total answers, $differ differ"
[[ $differ -eq 0 ]]
