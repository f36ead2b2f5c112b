#!/usr/bin/env bash
# Runs a command while nvidia-smi samples one GPU's (PW_SMI_GPU, default 0) SM clock and board power every 10 ms;
# writes the samples to LOG and prints their median and range to stderr.
#   cuda_kernels/clock_during.sh LOG COMMAND [ARGS...]
# Used to set a measurement beside the clock the GPU held while it ran (docs/experiments/sustained-load.md).
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 LOG COMMAND [ARGS...]" >&2; exit 2; }
log=$1; shift
nvidia-smi -i "${PW_SMI_GPU:-0}" --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits -lms 10 > "$log" &
sampler=$!
status=0
"$@" || status=$?
kill "$sampler" 2>/dev/null || true; wait "$sampler" 2>/dev/null || true
awk -F', *' '$2 > 0 { print $2, $3 }' "$log" | sort -n | awk -v file="$log" '
  { clock[NR] = $1; power += $2 } END {
    if (NR == 0) { print "clock_during: no samples in " file > "/dev/stderr"; exit }
    printf "clock_during: %d samples, SM clock median %d MHz (%d..%d), mean power %.0f W\n",
      NR, clock[int((NR + 1) / 2)], clock[1], clock[NR], power / NR > "/dev/stderr" }'
exit $status
