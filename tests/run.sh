#!/usr/bin/env bash
# The test command: builds and runs every test twice, once optimised (with the packaging
# and CLI tests) and once under AddressSanitizer + UndefinedBehaviorSanitizer; then the
# thread-safety tests ("[thread]") under ThreadSanitizer; then the Python package, installed with
# `pip install .` into a virtual environment and tested with pytest; then a minute of fuzzing for
# each input surface (tests/fuzz/), and the complexity rule (tests/complexity.sh). Warnings are
# errors in all.
# Build trees: build/, build-sanitize/, build-tsan/, build-python/ and build-fuzz/.
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

# ThreadSanitizer: the unit tests alone, the "[thread]" cases (threads filling the GEMM config
# memo at once, batches, rank, copies). Run with address-space randomisation off: g++ 12's TSan
# cannot place its shadow memory under the mmap randomisation of newer kernels.
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPIPEWEAVE_SANITIZERS=thread -DPIPEWEAVE_BUILD_CLI=OFF \
  -DPIPEWEAVE_BUILD_BENCHMARKS=OFF -DPIPEWEAVE_BUILD_EXAMPLES=OFF -DPIPEWEAVE_BUILD_CUDA=OFF -DPIPEWEAVE_INSTALL=OFF
cmake --build build-tsan --parallel "$jobs" --target pipeweave_tests
norandom=()
if setarch "$(uname -m)" -R true 2> /dev/null; then norandom=(setarch "$(uname -m)" -R); fi
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 "${norandom[@]}" build-tsan/tests/pipeweave_tests "[thread]"

# The Python package: a fresh `pip install .` (scikit-build-core and nanobind come from PyPI) into a
# virtual environment in the build tree, nothing system-wide; its tests check it against the CLI.
python3 -m venv build-python/venv
build-python/venv/bin/python -m pip install --quiet ".[test]"
PIPEWEAVE_CLI="$PWD/build/pipeweave" build-python/venv/bin/python -m pytest -q tests/python

# No function past a cyclomatic complexity of 30 (lizard, from PyPI, in the same environment).
build-python/venv/bin/python -m pip install --quiet "lizard>=1.17"
bash tests/complexity.sh build-python/venv/bin/lizard

# Fuzzing (libFuzzer, clang): every input surface for 60 s a target, from seeds out of data/ and
# tests/. The longer campaign, an hour a target: `bash tests/fuzz/run.sh 3600`.
bash tests/fuzz/run.sh 60
