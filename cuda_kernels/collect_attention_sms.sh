#!/usr/bin/env bash
# Attention at other compute/memory balances: FlashAttention-2 (PyTorch) and FlashAttention-3 on N
# of the GPU's SMs (collect_attention.py --sms N: a green context), for each N given, over a seeded
# subset of the attention shape lists (prompts and serving-context decode batches). One device call:
#
#   bash cuda_kernels/collect_attention_sms.sh OUT_DIR N [N...]
#
# Environment (default): PREFILL shapes drawn from data/shapes/attention.csv (800), DECODE from
# data/shapes/attention_decode.csv (400), SEED (1), FA3 (1: also FlashAttention-3, built from the
# vendored sources into /root/fa3 while FlashAttention-2 is measured; decode over 1-token pages, as
# the full GPU's main lists were).
# Writes OUT_DIR/shapes.csv (the subset), OUT_DIR/<impl>_sm<N>.jsonl.gz (raw records: pipeweave
# collect --from-raw names their GPU <name>-sm<obtained>) and progress to OUT_DIR/collect.txt.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 OUT_DIR N [N...]" >&2; exit 2; }
out=$1; shift
for n in "$@"; do [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "$0: N must be a positive whole number, got '$n'" >&2; exit 2; }; done
mkdir -p "$out"
out=$(realpath "$out")
cd "$(dirname "$0")/.."
say() { echo "$*" | tee -a "$out/collect.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$out/device.txt"

python3 - "${PREFILL:-800}" "${DECODE:-400}" "${SEED:-1}" "$out/shapes.csv" <<'EOF'
import random, sys
prefill, decode, seed, target = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rows, header = [], None
for source, count in (("data/shapes/attention.csv", prefill), ("data/shapes/attention_decode.csv", decode)):
    lines = [l for l in open(source).read().splitlines() if l and not l.startswith('#')]
    header, body = lines[0], lines[1:]
    if 0 < count < len(body):
        body = [body[i] for i in sorted(random.Random(seed).sample(range(len(body)), count))]
    rows += body
    print(f"{len(body)} shapes of {source} (seed {seed})")
open(target, 'w').write('\n'.join([header] + rows) + '\n')
EOF

measure() {  # name, then collect_attention.py's arguments
  local name=$1 start=$SECONDS
  shift
  python3 cuda_kernels/collect_attention.py "$@" --shapes "$out/shapes.csv" --out "/tmp/$name.jsonl" 2> "$out/$name.log"
  gzip -c "/tmp/$name.jsonl" > "$out/$name.jsonl.gz"
  say "$name: $(($(wc -l < "/tmp/$name.jsonl") - 1)) rows in $((SECONDS - start)) s; $(grep -m1 'GEMM takes' "$out/$name.log" || true)"
}

build=""
if [[ ${FA3:-1} == 1 ]]; then
  sources=../shared/vendor/flash-attention-hopper-src.tar.xz
  [[ -f $sources ]] || sources=.vendor/flash-attention-hopper-src.tar.xz
  # 12 of the 16 cores: FlashAttention-2 measures meanwhile (one kernel a call, no host work inside it)
  MAX_JOBS=12 bash cuda_kernels/build_fa3.sh "$sources" /root/fa3 > "$out/build_fa3.txt" 2>&1 &
  build=$!
fi
for n in "$@"; do measure "fa2_sm$n" --sms "$n"; done
if [[ -n $build ]]; then
  wait "$build" || { tail -20 "$out/build_fa3.txt" >&2; exit 1; }
  # FlashAttention-3 launches a scheduler kernel and does host work before the attention kernel:
  # measured with the CPU idle, after the build
  for n in "$@"; do measure "fa3_sm$n" --sms "$n" --impl flash3 --fa3-path /root/fa3/hopper --page-size 1; done
fi
