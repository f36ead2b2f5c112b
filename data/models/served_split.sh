# Sourced by served.sh, served_h200.sh and served_both_gpus.sh (with cli, out and gpu set): splits
# $gpu's served GEMM rows by family (split_served.py) into a temporary $split/{train,test}.csv
# (sourced again for another GPU, the same families and shapes fall on the same side), and defines
# score NAME EVAL_ARGS...: eval on $split/test.csv, its output and per-family table in $out/NAME.*.
mkdir -p "$out"
split=$(mktemp -d)
splits+=("$split")
trap 'rm -rf "${splits[@]}"' EXIT
python3 data/models/split_served.py "$split" "data/measurements/$gpu/gemm_served_bf16.csv.gz" \
  "data/measurements/$gpu/gemm_served_fp8.csv.gz" | tee "$out/split.txt"

score() {  # name, then eval's arguments: the eval's output and its per-family table
  local name=$1
  shift
  "$cli" eval "$@" --data "$split/test.csv" --specs data/gpus --report "$split/$name" > "$out/$name.txt"
  python3 data/models/served_report.py "$split/$name/eval.csv" "$split/test.csv" --csv "$out/$name.families.csv" \
    >> "$out/$name.txt"
  cat "$out/$name.txt"
}
