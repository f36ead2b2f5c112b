#!/usr/bin/env bash
# Fails when a function's cyclomatic complexity passes 30 anywhere in the project's code (the
# house rule: a longer function is split into named phases). Uses lizard (PyPI); the CUDA
# sources are read as C++, which lizard does not do by itself.
#   bash tests/complexity.sh [LIZARD]      (default: lizard on the PATH)
set -euo pipefail
cd "$(dirname "$0")/.."
lizard="${1:-lizard}"
cuda_as_cpp="$(mktemp -d)"
trap 'rm -rf "$cuda_as_cpp"' EXIT
for source in cuda_kernels/*.cu cuda_kernels/*.cuh; do cp "$source" "$cuda_as_cpp/$(basename "$source").cpp"; done
if ! "$lizard" --CCN 30 --warnings_only src include python tests benchmarks examples cuda_kernels "$cuda_as_cpp"; then
  echo "tests/complexity.sh: the functions above pass a cyclomatic complexity of 30: split them into named phases" >&2
  exit 1
fi
echo "complexity: no function past a cyclomatic complexity of 30"
