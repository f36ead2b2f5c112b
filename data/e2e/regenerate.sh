#!/usr/bin/env bash
# Rewrites the Llama-3.1-8B stack comparisons of docs/experiments/e2e-llama8b-stack.md ("End to end: a Llama-3.1-8B
# stack measured iteration by iteration") from the committed measurements:
#   bash data/e2e/regenerate.sh [BUILD_DIR]
# The stack replays only the workload's kernels, each iteration in a CUDA graph, with no serving
# engine around them: --engine none. Three predictions per measured run: bare (no sustained-load
# slowdown), with the GPU spec's sustained-load slowdown, and with it and the time the stack
# spends outside the modelled kernels per launch (1.5 us on the H100, 1.8 on the H200, measured
# from profiles: overhead.txt).
set -euo pipefail
cd "$(dirname "$0")/../.."
cli="${1:-build}/pipeweave"
run() {  # OUT REPORT_DIR ARGS...
  local out=$1 report=$2
  shift 2
  "$cli" e2e --engine none "$@" > "$out"
  [[ -z $report ]] || "$cli" e2e --engine none "$@" --report "$report" > /dev/null
}
for gpu in H100-SXM H200-SXM; do
  d=data/e2e/$gpu spec=data/gpus/$gpu.calibrated.json
  if [[ $gpu == H100-SXM ]]; then
    cases=("e2e|report|data/e2e/workload_llama8b_48.json|measured-1.csv|1.5")
  else
    cases=("e2e-tp1|report-tp1|data/e2e/workload_llama8b_48.json|measured-tp1.csv|1.8"
           "e2e-tp2|report-tp2|data/e2e/workload_llama8b_48_tp2.json|measured-tp2.csv|1.8")
  fi
  for c in "${cases[@]}"; do
    IFS='|' read -r name report workload measured launch <<< "$c"
    args=(--gpu "$spec" --workload "$workload" --measured "$d/$measured")
    run "$d/$name.txt" "$d/$report" "${args[@]}" --sustained-slowdown 1
    run "$d/$name-sustained.txt" "$d/$report-sustained" "${args[@]}"
    run "$d/$name-full.txt" "$d/$report-full" "${args[@]}" --kernel-overhead-us "$launch"
  done
done
# The figures of docs/experiments/e2e-llama8b-stack.md's tables: per phase the mean |error| and the mean signed error
# (negative: predicted too fast), and the iterations within 5%, from each report's iterations.csv.
python3 - <<'PY'
import csv, glob
for report in sorted(glob.glob("data/e2e/H*-SXM/report*")):
    rows = list(csv.DictReader(open(report + "/iterations.csv")))
    errors = {r["iteration"]: (float(r["total_us"]) - float(r["measured_us"])) / float(r["measured_us"]) * 100 for r in rows}
    cells = []
    for phase in ("all", "prefill", "mixed", "decode"):
        chosen = [errors[r["iteration"]] for r in rows if phase == "all" or r["phase"] == phase]
        cells.append(f"{phase} {sum(map(abs, chosen)) / len(chosen):.2f}% ({sum(chosen) / len(chosen):+.2f}%)")
    within = sum(abs(e) <= 5 for e in errors.values())
    print(f"{report}: " + ", ".join(cells) + f", within 5%: {within} of {len(rows)}")
PY
