#!/usr/bin/env bash
# Fuzzes every input surface of the library with libFuzzer (tests/fuzz/fuzz_*.cpp): builds the
# library and the targets with clang under ASan + UBSan into build-fuzz/, seeds each target from
# data/, tests/ and tests/fuzz/seeds/, and runs each for SECONDS_PER_TARGET (default 60), as many
# targets at once as there are cores.
#
#   bash tests/fuzz/run.sh           # the CI budget: 60 s a target
#   bash tests/fuzz/run.sh 3600      # the longer campaign: an hour a target
#
# Exits non-zero when any target finds a crash, sanitizer report, exception other than
# pipeweave::Error, timeout (-timeout=10 s on one input) or out-of-memory (-rss_limit_mb=2048,
# and one allocation past it). The input is saved as build-fuzz/findings/<target>/crash-* (or
# timeout-*, oom-*, leak-*; cleared at the start of each run); rerun it alone with
# `build-fuzz/fuzz/<target> <file>`. Corpora grow in build-fuzz/corpus/<target>/, kept from run to run.
# Needs clang and its sanitizer and fuzzer runtimes (Debian 12: clang, clang-14, libclang-rt-14-dev);
# CC and CXX choose another clang (CC=clang-15 CXX=clang++-15).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [SECONDS_PER_TARGET]" >&2; exit 2; }
build="build-fuzz"
cores=$(nproc)

CC=${CC:-clang} CXX=${CXX:-clang++} cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPIPEWEAVE_BUILD_FUZZERS=ON \
  -DPIPEWEAVE_BUILD_TESTS=OFF -DPIPEWEAVE_BUILD_CLI=OFF -DPIPEWEAVE_BUILD_BENCHMARKS=OFF -DPIPEWEAVE_BUILD_EXAMPLES=OFF \
  -DPIPEWEAVE_BUILD_CUDA=OFF -DPIPEWEAVE_INSTALL=OFF
cmake --build "$build" --parallel "$cores" --target fuzzers

# Seeds, made afresh each run: JSON files whole, the first lines of line-oriented files (CSV, JSON lines).
seeds="$build/seeds"
rm -rf "$seeds"
seed() {  # seed TARGET FILE...: copies each file into TARGET's seeds (decompressed)
  local target=$1 file name
  shift
  mkdir -p "$seeds/$target"
  for file in "$@"; do
    [ -f "$file" ] || continue
    name="$seeds/$target/$(echo "$file" | tr / _)"
    case "$file" in
      *.gz) { zcat "$file" || true; } | head -n 16 > "${name%.gz}" ;;
      *.csv | *.jsonl) head -n 16 "$file" > "$name" ;;
      *) cp "$file" "$name" ;;
    esac
  done
}
mkdir -p "$seeds/fuzz_kernel"
# Kernel strings, one a file, from the tests and examples.
grep -rhoE '"(gemm|attention|rmsnorm|silu_mul|fused_moe|elementwise|all_reduce|all_gather|reduce_scatter|all_to_all|send_recv):[^" ]*"' \
  tests/*.cpp tests/cli_tests.cmake examples | tr -d '"' | sort -u | split -l 1 - "$seeds/fuzz_kernel/kernel_"
seed fuzz_gpu_spec data/gpus/*.calibrated.json data/gpus/*.device_info.json tests/data/h100_spec.json
seed fuzz_model tests/fuzz/seeds/model/*.json  # the bundled models cut to hidden widths 3 and 2 (data/models: 0.27 MB each, packed); two packed as version 2
seed fuzz_workload tests/data/published/*.json tests/data/workload_llama_tp2.json
seed fuzz_hf_config tests/data/models/*/config.json data/e2e/*/config.json
seed fuzz_trace tests/data/trace_*.csv data/e2e/trace_48.csv
mapfile -t measurement_files < <(find tests/data data/measurements -name '*.csv' -o -name '*.csv.gz' | grep -v -e smi -e trace_ | sort)
seed fuzz_measurements "${measurement_files[@]}"
mapfile -t raw_files < <(find tests/data data/measurements -name '*.jsonl' -o -name '*.jsonl.gz' | sort)
seed fuzz_raw_jsonl "${raw_files[@]}"

# The longest input each target is given, in bytes: room for the largest seed of its kind.
declare -A max_len=([fuzz_kernel]=4096 [fuzz_gpu_spec]=16384 [fuzz_model]=16384 [fuzz_workload]=16384
                    [fuzz_hf_config]=4096 [fuzz_trace]=4096 [fuzz_measurements]=8192 [fuzz_raw_jsonl]=8192)
targets=(fuzz_kernel fuzz_gpu_spec fuzz_model fuzz_workload fuzz_hf_config fuzz_trace fuzz_measurements fuzz_raw_jsonl)
rm -rf "$build/findings" "$build/logs"
mkdir -p "$build/logs"
run_target() {  # run_target TARGET: its log in logs/TARGET.log, its exit status in logs/TARGET.status
  local target=$1 status=0 extra=()
  [ "$target" != fuzz_kernel ] || extra=(-dict=tests/fuzz/kernel.dict)
  mkdir -p "$build/corpus/$target" "$build/findings/$target"
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="${max_len[$target]}" \
    "${extra[@]}" -print_final_stats=1 -artifact_prefix="$build/findings/$target/" "$build/corpus/$target" "$seeds/$target" \
    > "$build/logs/$target.log" 2>&1 || status=$?
  echo "$status" > "$build/logs/$target.status"
}
running=0
for target in "${targets[@]}"; do  # one process a target, as many at once as there are cores
  if ((running >= cores)); then wait -n || true; running=$((running - 1)); fi
  run_target "$target" &
  running=$((running + 1))
done
wait
failed=()
for target in "${targets[@]}"; do
  status=$(cat "$build/logs/$target.status")
  if [ "$status" = 0 ]; then verdict=clean; else verdict="FOUND (exit $status)"; failed+=("$target"); fi
  # libFuzzer's last progress line: runs, coverage (cov: edges, ft: features), corpus, exec/s, memory
  last=$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$build/logs/$target.log" | tail -n 1 || true)
  echo "$target: $verdict  ${last:-no progress line, see $build/logs/$target.log}"
done
if ((${#failed[@]})); then
  echo "fuzzing found problems in: ${failed[*]} (logs in $build/logs/); inputs:" >&2
  find "$build/findings" -type f | sort | sed 's/^/  /' >&2
  exit 1
fi
echo "fuzzing: ${#targets[@]} targets clean for ${seconds} s each"
