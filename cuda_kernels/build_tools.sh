# Sourced by the device scripts (collect_served.sh, collect_sm_variants.sh, served_sustained.sh) from
# the repository root. Defines
#   build_tools BUILD_DIR LOG TARGET...
# which configures BUILD_DIR as a Release build of the measuring tools alone (no tests, benchmarks
# or examples) and builds the TARGETs, cmake's output in LOG; on failure it prints the log's tail
# and exits. Warnings stay warnings here: a newer compiler than the project's must not stop a
# collection.
build_tools() {
  local build=$1 log=$2
  shift 2
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPIPEWEAVE_BUILD_TESTS=OFF -DPIPEWEAVE_BUILD_BENCHMARKS=OFF \
    -DPIPEWEAVE_BUILD_EXAMPLES=OFF -DPIPEWEAVE_WARNINGS_AS_ERRORS=OFF > "$log" 2>&1
  cmake --build "$build" -j"$(nproc)" --target "$@" >> "$log" 2>&1 || { tail -30 "$log" >&2; exit 1; }
}
