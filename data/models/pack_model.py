#!/usr/bin/env python3
"""Rewrites pipeweave-mlp files of version 1 (the layers' numbers as decimals) as version 2 (packed:
each layer's weights and bias as base64 of little-endian float32, row-major; docs/formats.md), in
place; files already of version 2 are left as they are. The floats are those version 1's reader
made of the decimals (decimal -> double -> float, as C++ reads them), so every prediction stays the
same to the bit; every other field keeps its value. `train` writes version 2 itself.

    python3 data/models/pack_model.py data/models/*.json
"""
import base64
import json
import struct
import sys


def packed(values):
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode("ascii")


def pack_layers(layers):
    out = []
    for layer in layers:
        rows = layer["weights"]
        columns = len(rows[0])
        if any(len(row) != columns for row in rows):
            raise SystemExit("a layer's rows differ in length")
        out.append({"bias_base64": packed(layer["bias"]), "shape": [len(rows), columns],
                    "weights_base64": packed([w for row in rows for w in row])})
    return out


def main(paths):
    for path in paths:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
        if document.get("format") != "pipeweave-mlp":
            raise SystemExit(f"{path}: not a pipeweave-mlp file")
        if document.get("version") == 2:
            print(f"{path}: already version 2")
            continue
        if document.get("version") != 1:
            raise SystemExit(f"{path}: version {document.get('version')!r}, not 1 or 2")
        document["version"] = 2
        document["layers"] = pack_layers(document["layers"])
        if "further_networks" in document:
            document["further_networks"] = [pack_layers(n) for n in document["further_networks"]]
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps(document, separators=(",", ":"), ensure_ascii=False, sort_keys=True) + "\n")
        print(f"{path}: version 2")


if __name__ == "__main__":
    main(sys.argv[1:])
