#!/usr/bin/env python3
"""Writes the shortened published workloads of this folder from the published archive.

    python3 tests/data/published/shorten.py [ARCHIVE]   (default ../shared/public-data/pipeweave-published.tar.xz)
"""
import json
import os
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
ARCHIVE = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "..", "..", "shared", "public-data",
                                                               "pipeweave-published.tar.xz")
KEEP = {"Qwen2.5-14B_arxiv_8_fa3_tp1_pp1.json": 3, "Qwen3-32B_splitwise_48_fa2_tp2_pp1.json": 3,
        "Llama-3.1-70B_arxiv_16_fa3_tp4_pp1.json": 3, "Llama-3.1-70B_splitwise_64_fa3_tp8_pp1.json": 2,
        "Llama-3.1-70B_vllm_a16_fa3_tp4_pp2.json": 3}
with tarfile.open(ARCHIVE) as archive:
    # Every published workload, its first two iterations (the prompt iteration and a decode one).
    os.makedirs(os.path.join(HERE, "all"), exist_ok=True)
    for member in sorted(m.name for m in archive.getmembers() if m.name.startswith("./workloads/") and m.name.endswith(".json")):
        document = json.load(archive.extractfile(member))
        document["iterations"] = document["iterations"][:2]
        with open(os.path.join(HERE, "all", os.path.basename(member)), "w") as out:
            out.write(json.dumps(document, indent=1) + "\n")
    rows = archive.extractfile("./gemm_fp8_train.csv").read().decode().splitlines()
    kept = [rows[0]] + [r for r in rows[1:] if ",NVIDIA H20," in r][:30] + [r for r in rows[1:] if ",NVIDIA H800," in r][:30]
    with open(os.path.join(HERE, "gemm_fp8_train_first30.csv"), "w") as out:
        out.write("\n".join(kept) + "\n")
    for name, count in KEEP.items():
        document = json.load(archive.extractfile("./workloads/" + name))
        document["iterations"] = document["iterations"][:count]
        with open(os.path.join(HERE, name.replace(".json", f"_first{count}.json")), "w") as out:
            out.write(json.dumps(document, indent=1) + "\n")
