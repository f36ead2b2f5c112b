#!/usr/bin/env python3
"""Rewrites pipeweave-mlp files of version 1 (the layers' numbers as decimals) as version 2 (packed:
each layer's weights and bias as base64 of little-endian float32, row-major; docs/formats.md), in
place; files already of version 2 are left as they are, but for an old-layout tree (below). The floats are those version 1's reader
made of the decimals (decimal -> double -> float, as C++ reads them), so every prediction stays the
same to the bit; every other field keeps its value. `train` writes version 2 itself. A config tree
in the per-node layout of before (a threshold, left and right child and config for every node) is
rewritten in the file's layout of now (docs/formats.md: left children implicit, a threshold and right
child per inner node, a config per leaf), the same numbers.

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


def unpacked(text):
    raw = base64.b64decode(text)
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def relayout_tree(tree):
    """The per-node layout's arrays as the layout of now: the same tree, the same floats."""
    inputs, thresholds, lefts, rights, configs = (unpacked(tree[key]) for key in
                                                 ("input_base64", "threshold_base64", "left_base64", "right_base64", "config_base64"))
    inner = [i for i, feature in enumerate(inputs) if feature != -1]
    if any(lefts[i] != i + 1 for i in inner):
        raise SystemExit("a tree whose left children are not the next nodes (not in preorder) has no layout of now")
    del tree["left_base64"]
    tree["threshold_base64"] = packed([thresholds[i] for i in inner])
    tree["right_base64"] = packed([rights[i] for i in inner])
    tree["config_base64"] = packed([c for i, c in enumerate(configs) if inputs[i] == -1])


def main(paths):
    for path in paths:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
        if document.get("format") != "pipeweave-mlp":
            raise SystemExit(f"{path}: not a pipeweave-mlp file")
        if document.get("version") == 2:
            if "left_base64" not in document.get("config_tree", {}):
                print(f"{path}: already version 2")
                continue
            relayout_tree(document["config_tree"])
            with open(path, "w", encoding="utf-8") as f:
                f.write(json.dumps(document, separators=(",", ":"), ensure_ascii=False, sort_keys=True) + "\n")
            print(f"{path}: its config tree in the layout of now")
            continue
        if document.get("version") != 1:
            raise SystemExit(f"{path}: version {document.get('version')!r}, not 1 or 2")
        document["version"] = 2
        document["layers"] = pack_layers(document["layers"])
        if "left_base64" in document.get("config_tree", {}):
            relayout_tree(document["config_tree"])
        if "further_networks" in document:
            document["further_networks"] = [pack_layers(n) for n in document["further_networks"]]
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps(document, separators=(",", ":"), ensure_ascii=False, sort_keys=True) + "\n")
        print(f"{path}: version 2")


if __name__ == "__main__":
    main(sys.argv[1:])
