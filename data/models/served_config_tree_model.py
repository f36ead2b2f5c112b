#!/usr/bin/env python3
"""A network for GEMMs without a config that reads the config a tree expects cuBLAS to run:

    python3 data/models/served_config_tree_model.py GEMM.json TREE.json --dtypes fp8_e4m3,fp8_e5m2 --out MODEL.json

GEMM.json: a GEMM model `pipeweave train --op gemm` trained on rows given the tree's out-of-fold
configs (served_config_tree.py's train_{dtype}.csv); TREE.json: the tree fitted on every training
row (served_config_tree.py --tree-json). Writes the model file with the tree inside
(config_pick "cublas_tree", config_tree; docs/formats.md), answering for the --dtypes listed.
"""
import argparse
import json


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("gemm")
    parser.add_argument("tree")
    parser.add_argument("--dtypes", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--data", help="what the provenance's data says (the rows' temporary file by default)")
    args = parser.parse_args()
    with open(args.gemm) as f:
        model = json.load(f)
    with open(args.tree) as f:
        tree = json.load(f)
    if model.get("for_configless_gemm") or model.get("op_family") != "gemm":
        raise SystemExit(f"served_config_tree_model: {args.gemm} must be a GEMM model for GEMMs with their config")
    model.pop("configless_scale", None)  # (a model for GEMMs without a config holds none)
    model["for_configless_gemm"] = True
    model["dtypes"] = args.dtypes.split(",")
    model["config_pick"] = "cublas_tree"
    model["config_tree"] = tree
    provenance = model.setdefault("provenance", {})
    provenance["config_tree"] = "a decision tree of data/models/served_config_tree.py, joined by served_config_tree_model.py"
    if args.data:
        provenance["data"] = args.data
    with open(args.out, "w") as f:
        json.dump(model, f, sort_keys=True, separators=(",", ":"))


if __name__ == "__main__":
    main()
