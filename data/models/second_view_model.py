#!/usr/bin/env python3
"""A model for GEMMs without a config that answers with a second view beside its own:

    python3 data/models/second_view_model.py MODEL.json[.gz] VIEW.json[.gz] --out OUT.json[.gz]

MODEL: a model for GEMMs without a config whose network reads the search's pick (`pipeweave train
--without-configs`; a second view it already holds is replaced); VIEW: one for the same data types
that reads its tree's config (served_config_tree_model.py's, as served_config_tree_fresh.sh writes
it). Writes MODEL with VIEW as its `second_view` (docs/formats.md): the library answers the geometric
mean of the two latencies where the view applies (MlpDescription::second_view). An OUT ending .gz
is written gzip-compressed, without a name or time in its header (as the bundled models are kept).
"""
import argparse
import json

from model_file import read_text, write_text


def read(path):
    return json.loads(read_text(path)[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("view")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    model, view = read(args.model), read(args.view)
    model.pop("second_view", None)
    if not model.get("for_configless_gemm") or model.get("config_pick", "search") != "search":
        raise SystemExit(f"second_view_model: {args.model} must be a model for GEMMs without a config that reads the search's pick")
    if not view.get("for_configless_gemm") or view.get("config_pick") != "cublas_tree":
        raise SystemExit(f"second_view_model: {args.view} must be a model for GEMMs without a config that reads its tree's pick")
    if view.get("dtypes", []) != model.get("dtypes", []):
        raise SystemExit(f"second_view_model: {args.view} lists the data types {view.get('dtypes', [])}, "
                         f"{args.model} {model.get('dtypes', [])}: they must be the same")
    model["second_view"] = view
    write_text(args.out, json.dumps(model, sort_keys=True, separators=(",", ":")) + "\n", args.out.endswith(".gz"))


if __name__ == "__main__":
    main()
