#!/usr/bin/env bash
# cuBLAS's first choice of kernel for many GEMM shapes, on the GPU in hand: what a tree of
# cuBLAS's configs learns from (data/models/served_config_tree.py --choices), with no time worth
# keeping. One device call per data type:
#
#   bash cuda_kernels/collect_cublas_choice.sh OUT_DIR bf16      # then, SKIP_BUILD=1, fp8
#
# 1. The shape list (served_gemm_shapes.py: the layers of its 42 families at TP 1-8, PER_LAYER token
#    counts each, and RANDOM_SHAPES random shapes; SEED its draw, shuffled) -> OUT_DIR/shapes.csv,
#    each type's list led by CHECK rows drawn from the GPU's committed served rows
#    (data/measurements/$GPU/gemm_served_{bf16,fp8}.csv.gz, family "check"), whose kernel the
#    conversion compares with the one recorded there.
# 2. One call per shape (pipeweave-collect --algos 1 --l2 warm --reps 1 --warmup 0: cuBLASLt's
#    first heuristic choice, its kernels' names from CUPTI), for at most BUDGET_S seconds (the list is
#    shuffled: what is reached in time is a random subset) -> OUT_DIR/choice_{dtype}.jsonl.gz,
#    raw records for pipeweave collect --from-raw (cuda_kernels/cublas_choice_to_rows.py).
# Environment (default): GPU (H200-SXM), SEED (6), PER_LAYER (64), RANDOM_SHAPES (120000),
# CHECK (1000), BUDGET_S (420), BUILD (build; SKIP_BUILD=1 uses it as it is).
set -euo pipefail
out=${1:?usage: collect_cublas_choice.sh OUT_DIR bf16|fp8}
dtype=${2:?usage: collect_cublas_choice.sh OUT_DIR bf16|fp8}
[[ $dtype == bf16 || $dtype == fp8 ]] || { echo "collect_cublas_choice.sh: the type must be bf16 or fp8, got $dtype" >&2; exit 2; }
mkdir -p "$out"
out=$(realpath "$out")
cd "$(dirname "$0")/.."
build=${BUILD:-build}
gpu=${GPU:-H200-SXM}
say() { echo "$*" | tee -a "$out/collect.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$out/device.txt"
if [[ ! -f $out/shapes.csv ]]; then
  python3 cuda_kernels/served_gemm_shapes.py --out "$out/shapes.csv" --per-layer "${PER_LAYER:-64}" \
    --random "${RANDOM_SHAPES:-120000}" --seed "${SEED:-6}" | tee -a "$out/collect.txt"
fi
source cuda_kernels/build_tools.sh
build_unless_skipped "$build" "$out" pipeweave_collect
list="$out/shapes-$dtype.csv"
type_name=$dtype
[[ $dtype == fp8 ]] && type_name=fp8_e4m3
python3 - "data/measurements/$gpu/gemm_served_$dtype.csv.gz" "${CHECK:-1000}" "$out/shapes.csv" "$type_name" > "$list" <<'EOF'
import csv, gzip, random, sys
served, count, shapes, type_name = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
with gzip.open(served, "rt", newline="") as f:
    first = [r for r in csv.DictReader(f) if r["candidate"] == "0"]
print("dtype,m,n,k,family,tp,layer")
for r in random.Random(1).sample(first, min(count, len(first))):
    print(f"{type_name},{r['m']},{r['n']},{r['k']},check,0,check")
with open(shapes, newline="") as f:
    for r in csv.DictReader(f):
        if r["dtype"] == type_name:
            print(",".join(r[c] for c in ("dtype", "m", "n", "k", "family", "tp", "layer")))
EOF
start=$SECONDS
# timeout ends the collection at its budget; the records written until then are whole lines
timeout "${BUDGET_S:-420}" "$build/pipeweave-collect" --op gemm --shapes "$list" --algos 1 --l2 warm \
  --reps 1 --warmup 0 --out "/tmp/choice_$dtype.jsonl" 2> "$out/choice_$dtype.log" || true
gzip -c "/tmp/choice_$dtype.jsonl" > "$out/choice_$dtype.jsonl.gz"
say "$dtype: $(($(wc -l < "/tmp/choice_$dtype.jsonl") - 1)) of $(($(wc -l < "$list") - 1)) shapes in $((SECONDS - start)) s"
