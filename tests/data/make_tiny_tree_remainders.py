#!/usr/bin/env python3
"""Writes the fixtures of the config tree's remainder inputs (tests/test_predictor.cpp):

    venv/bin/python tests/data/make_tiny_tree_remainders.py

PYTHON with numpy and scikit-learn (PyPI), from the repository root. A tree of depth 8 fitted by
data/models/served_config_tree.py's own code on the fp8 served rows of both GPUs with the shape's
remainders as inputs (--remainders), put in the place of tests/data/tiny_tree_fp8.json's tree
(tests/data/tiny_tree_remainders_fp8.json, the same 8-wide network), and scikit-learn's own picks of it for 200 fresh shapes of
each GPU (seed 4) and a few at the edges (m a whole number of tiles, m 1, m 2^30):
tests/data/tiny_tree_remainders_picks.csv. The library's walk must name the same configs.
"""
import csv
import json
import os
import random
import sys

import numpy as np
from sklearn.tree import DecisionTreeClassifier

sys.path.insert(0, "data/models")
import served_config_tree as study  # noqa: E402

m = "data/measurements"
_, rows = study.read([f"{m}/H100-SXM/gemm_served_fp8.csv.gz", f"{m}/H200-SXM/gemm_served_fp8.csv.gz"], "fp8")
rows = [r for r in rows if r["config_source"] != "unknown"]
inputs = lambda r: study.features(r) + study.remainders(r)  # noqa: E731
tree = DecisionTreeClassifier(max_depth=8, random_state=1).fit(
    np.array([inputs(r) for r in rows]), ["|".join(r[c] for c in study.CONFIG) for r in rows])
names = study.INPUT_NAMES + study.REMAINDER_NAMES
used = sorted({names[f] for f in tree.tree_.feature if f >= 0})
print(f"{tree.tree_.node_count} nodes; inputs split on: {', '.join(used)}")
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "tiny_tree_fp8.json")) as f:
    model = json.load(f)
model["config_tree"] = study.tree_to_json(tree, names)
model["provenance"]["config_tree"] = "tests/data/make_tiny_tree_remainders.py: a depth-8 tree of the shape's scale and remainders"
with open(os.path.join(here, "tiny_tree_remainders_fp8.json"), "w") as f:
    json.dump(model, f, sort_keys=True, separators=(",", ":"))
shapes = []
for gpu in ("H100-SXM", "H200-SXM"):
    _, fresh = study.read([f"{m}/{gpu}/gemm_served_seed4_fp8.csv.gz"], "fp8")
    shapes += [(gpu, int(r["m"]), int(r["n"]), int(r["k"])) for r in random.Random(1).sample(fresh, 200)]
    shapes += [(gpu, mm, 4096, 4096) for mm in (1, 64, 128, 256, 1000, 1024, 1536, 8192, 1 << 30)]
    shapes += [(gpu, 1024, 2**30 // 4096 * 16, 4096)]
with open(os.path.join(here, "tiny_tree_remainders_picks.csv"), "w", newline="") as f:
    out = csv.writer(f, lineterminator="\n")
    out.writerow(("gpu", "m", "n", "k") + study.CONFIG)
    picks = tree.predict(np.array([inputs({"gpu": g, "m": a, "n": b, "k": c}) for g, a, b, c in shapes]))
    for shape, pick in zip(shapes, picks):
        out.writerow(shape + tuple(pick.split("|")))
