#!/usr/bin/env bash
# The README's first command: installs what is missing, builds, and runs the main job:
# the kernels of one Llama-3-8B decoder layer, prefill and decode, on the default GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
.ci/install-deps
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build --parallel "$(nproc)" --target llama3_8b_layer pipeweave_cli
build/llama3_8b_layer "$@"
