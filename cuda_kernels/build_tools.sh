# Sourced by the device scripts (collect_served.sh, collect_sm_variants.sh, served_sustained.sh,
# collect_cublas_choice.sh) from the repository root. Defines
#   build_tools BUILD_DIR LOG TARGET...
# which configures BUILD_DIR as a Release build of the measuring tools alone (no tests, benchmarks
# or examples) and builds the TARGETs, cmake's output in LOG; on failure it prints the log's tail
# and exits; and
#   build_unless_skipped BUILD_DIR OUT_DIR TARGET...
# which does so (LOG: OUT_DIR/build.log) and says how long it took in OUT_DIR/collect.txt, unless
# SKIP_BUILD=1 (BUILD_DIR used as it is). Warnings stay warnings here: a newer compiler than the project's must not stop a
# collection; and
#   gpu_state OUT_DIR STEP
# which appends STEP and nvidia-smi's temperature, SM clock and power now to OUT_DIR/state.csv
# (its header written first where the file is new: collect_served_boards.sh).
build_tools() {
  local build=$1 log=$2
  shift 2
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPIPEWEAVE_BUILD_TESTS=OFF -DPIPEWEAVE_BUILD_BENCHMARKS=OFF \
    -DPIPEWEAVE_BUILD_EXAMPLES=OFF -DPIPEWEAVE_WARNINGS_AS_ERRORS=OFF > "$log" 2>&1
  cmake --build "$build" -j"$(nproc)" --target "$@" >> "$log" 2>&1 || { tail -30 "$log" >&2; exit 1; }
}
build_unless_skipped() {
  local build=$1 out=$2 start=$SECONDS
  shift 2
  [[ ${SKIP_BUILD:-0} == 1 ]] && return 0
  build_tools "$build" "$out/build.log" "$@"
  echo "built $* in $((SECONDS - start)) s" | tee -a "$out/collect.txt"
}
gpu_state() {
  [[ -f $1/state.csv ]] || echo "step,temperature_c,sm_clock_mhz,power_w" > "$1/state.csv"
  echo "$2,$(nvidia-smi --query-gpu=temperature.gpu,clocks.sm,power.draw --format=csv,noheader,nounits | head -1)" >> "$1/state.csv"
}
