#!/usr/bin/env bash
# The bundled bf16 model for GEMMs without a config: the network reading the GEMM model's pick, with
# the network reading the decision tree's config as its second view (the library answers the
# geometric mean of the two where the tree applies: MlpDescription::second_view,
# docs/experiments/served-gemms.md, "Two views in the library"):
#   PYTHON=venv/bin/python [PICK=FILE] [MODEL_OUT=FILE] bash data/models/served_second_view.sh [BUILD_DIR]
# PYTHON: an interpreter with numpy and scikit-learn (PyPI). About 20 minutes on 2 cores.
# 1. The tree and its network, trained on every served bf16 row of seeds 1-3 of both GPUs and the
#    H200's cuBLAS choices (served_config_tree_fresh.sh DTYPE=bf16: its own latency_scale, its
#    scores alone on the fresh draws in data/models/report/served/config_tree/fresh_bf16/, which a
#    run rewrites, whatever PICK and MODEL_OUT are).
# 2. Joined as the second view of PICK (default: the bundled data/models/gemm_configless_bf16.json.gz,
#    whose network served_all.sh trains; a view it holds is replaced) by second_view_model.py, into
#    MODEL_OUT (default: PICK; a name ending .gz is written gzip-compressed). Rebuild to embed it.
# Scored then from the shape on the fresh draws, as the bundled models are (served_fresh.sh;
# OUT=data/models/report/served/fresh/served_all for the bundled ones). served_config_tree_fresh.sh's
# TRAIN_SEEDS, TEST_SEEDS and REPORT apply to step 1 (a study's view: REPORT elsewhere, MODEL_OUT too).
set -euo pipefail
build=$(realpath "${1:-$(dirname "$0")/../../build}")  # (these three resolved before the cd below)
pick=$(realpath -m "${PICK:-$(dirname "$0")/gemm_configless_bf16.json.gz}")
model_out=$(realpath -m "${MODEL_OUT:-$pick}")
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
DTYPE=bf16 MODEL_OUT="$work/view.json" bash data/models/served_config_tree_fresh.sh "$build"
python3 data/models/second_view_model.py "$pick" "$work/view.json" --out "$model_out"
