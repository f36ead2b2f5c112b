#!/usr/bin/env bash
# Collects one op's shape list several times in one sitting, alternating first-to-last and
# last-to-first candidate order, so that `pipeweave collect --from-raw RUN1 RUN2 ...` can pool
# them: the median over runs halves the run-to-run noise, and the two orders cancel the clock's
# drift within a shape's back-to-back calls (docs/experiments/reproducibility.md).
#   cuda_kernels/repeat_collect.sh OUT_DIR OP SHAPES RUNS [COLLECT [OPTION...]]
# COLLECT: the pipeweave-collect binary (default: on PATH); OPTIONs go to it (e.g. --rest 2).
# FIRST_RUN=N (environment, default 1) starts at run N, to add runs to earlier ones: odd runs go
# first to last, even runs last to first.
# Writes OUT_DIR/<op>-run<i>.jsonl.gz, the nvidia-smi clock log of each run and a console log.
set -euo pipefail
[[ $# -ge 4 ]] || { echo "usage: $0 OUT_DIR OP SHAPES RUNS [COLLECT [OPTION...]]" >&2; exit 2; }
out=$1 op=$2 shapes=$3 runs=$4 collect=${5:-pipeweave-collect}
shift $(( $# < 5 ? $# : 5 ))
options=("$@")
here=$(dirname "$0")
mkdir -p "$out"
work=$(mktemp -d)  # the uncompressed runs and their stderr, until gzipped
trap 'rm -rf "$work"' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$out/console.txt"
for ((run = ${FIRST_RUN:-1}; run <= runs; ++run)); do
  order=(); label="first to last"
  (( run % 2 == 0 )) && order=(--reverse) && label="last to first"
  start=$(date +%s)
  "$here/clock_during.sh" "$out/smi-run$run.csv" "$collect" --op "$op" --shapes "$shapes" \
    --out "$work/$op-run$run.jsonl" "${order[@]}" "${options[@]}" 2> "$work/$op-run$run.log"
  echo "$op run $run ($label): $(($(wc -l < "$work/$op-run$run.jsonl") - 1)) rows in $(($(date +%s) - start)) s;" \
    "$(tail -1 "$work/$op-run$run.log")" | tee -a "$out/console.txt"
  gzip -9c "$work/$op-run$run.jsonl" > "$out/$op-run$run.jsonl.gz"
  gzip -9f "$out/smi-run$run.csv"
done
