#!/usr/bin/env python3
"""Writes cublaslt_enums.inc: cuBLASLt's tile, stages and cluster-shape enumerators with the sizes
their names spell out, for collect.cu to decode an algorithm's config ids into numbers (the
header gives only the names; cublasLtMatmulAlgoConfigGetAttribute returns the ids).

    python3 cuda_kernels/gen_cublaslt_enums.py [/usr/local/cuda/include/cublasLt.h] > cuda_kernels/cublaslt_enums.inc

Reads the enumerators in the header's order, those of the forms CUBLASLT_MATMUL_TILE_<m>x<n>,
CUBLASLT_MATMUL_STAGES_<k>x<stages> (<stages> AUTO: 0) and CUBLASLT_CLUSTER_SHAPE_<m>x<n>x<k>;
UNDEFINED, AUTO and END name no size and are left out. The CUDA version in the first line is the
toolkit's CUDA_VERSION, from cuda.h beside the header.
"""
import os
import re
import sys

DEFAULT_HEADER = "/usr/local/cuda/include/cublasLt.h"
COMMAND = "python3 cuda_kernels/gen_cublaslt_enums.py /usr/local/cuda/include/cublasLt.h > cuda_kernels/cublaslt_enums.inc"

# An enumerator's definition starts its line; mentions in comments start with "*" or "//".
TILE = re.compile(r"^\s*(CUBLASLT_MATMUL_TILE_(\d+)x(\d+))\s*[=,]", re.MULTILINE)
STAGES = re.compile(r"^\s*(CUBLASLT_MATMUL_STAGES_(\d+)x(\d+|AUTO))\s*[=,]", re.MULTILINE)
CLUSTER = re.compile(r"^\s*(CUBLASLT_CLUSTER_SHAPE_(\d+)x(\d+)x(\d+))\s*[=,]", re.MULTILINE)


def cuda_version(cuda_h_text):
    """"13.0" from cuda.h's CUDA_VERSION (13000); cuBLAS's own version (cublas_api.h) may be a minor ahead."""
    match = re.search(r"#define\s+CUDA_VERSION\s+(\d+)", cuda_h_text)
    if not match:
        sys.exit("gen_cublaslt_enums: error: cuda.h beside the header defines no CUDA_VERSION")
    number = int(match.group(1))
    return f"{number // 1000}.{number % 1000 // 10}"


def entries(pattern, header_text, sizes):
    """`{NAME, size, ...},` lines of the enumerators `pattern` matches, in the header's order."""
    lines = [f"    {{{match.group(1)}, {', '.join(sizes(match))}}}," for match in pattern.finditer(header_text)]
    if not lines:
        sys.exit(f"gen_cublaslt_enums: error: no enumerator matches {pattern.pattern}")
    return lines


def render(header_text, version):
    lines = [
        f"// cuBLASLt's config enums decoded to numbers, listed from cublasLt.h (CUDA {version}) because the",
        "// header gives only names. Stages \"AUTO\" decode to 0 stages. Written, not to be edited, by",
        f"//   {COMMAND}",
        "struct TileEntry { int id, m, n; };",
        "struct StagesEntry { int id, k, stages; };",
        "struct ClusterEntry { int id, m, n, k; };",
        "constexpr TileEntry kTiles[] = {",
        *entries(TILE, header_text, lambda m: (m.group(2), m.group(3))),
        "};",
        "constexpr StagesEntry kStages[] = {",
        *entries(STAGES, header_text, lambda m: (m.group(2), "0" if m.group(3) == "AUTO" else m.group(3))),
        "};",
        "constexpr ClusterEntry kClusters[] = {",
        *entries(CLUSTER, header_text, lambda m: (m.group(2), m.group(3), m.group(4))),
        "};",
    ]
    return "\n".join(lines) + "\n"


def main():
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__)
        return
    if len(sys.argv) > 2:
        sys.exit("usage: gen_cublaslt_enums.py [PATH/cublasLt.h] > cublaslt_enums.inc")
    header = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_HEADER
    try:
        with open(header) as f:
            header_text = f.read()
    except OSError as error:
        sys.exit(f"gen_cublaslt_enums: error: cannot read {header}: {error.strerror}")
    # CUDA's version is in cuda.h, beside cublasLt.h in the toolkit's include folder.
    cuda_h = os.path.join(os.path.dirname(os.path.abspath(header)), "cuda.h")
    try:
        with open(cuda_h) as f:
            cuda_h_text = f.read()
    except OSError as error:
        sys.exit(f"gen_cublaslt_enums: error: cannot read {cuda_h}: {error.strerror}")
    sys.stdout.write(render(header_text, cuda_version(cuda_h_text)))


if __name__ == "__main__":
    main()
