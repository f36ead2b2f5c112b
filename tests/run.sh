#!/usr/bin/env bash
# The test command: builds and runs every test twice, once optimised (with the packaging
# and CLI tests) and once under AddressSanitizer + UndefinedBehaviorSanitizer.
# Warnings are errors in both. Build trees: build/ and build-sanitize/.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build --parallel "$jobs"
ctest --test-dir build --output-on-failure --parallel "$jobs"

cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DPIPEWEAVE_SANITIZERS=address,undefined \
  -DPIPEWEAVE_BUILD_BENCHMARKS=OFF -DPIPEWEAVE_BUILD_CUDA=OFF -DPIPEWEAVE_INSTALL=OFF
cmake --build build-sanitize --parallel "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-sanitize --output-on-failure --parallel "$jobs"
