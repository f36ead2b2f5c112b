#!/usr/bin/env python3
"""Would one factor per data type, fitted on the training rows, take the mean bias off the fresh draws?

    python3 data/models/served_scale.py --fit EVAL.csv [--fit ...] [--score EVAL.csv DATA.csv[.gz]...]... [--write DTYPE=MODEL.json]...

A network trained with MAPE as its loss predicts the median ratio of measured to predicted, and a
tail of GEMMs slower than predicted stays in the mean (served_report.py --spread). Each --fit is
`pipeweave eval --without-configs --report DIR`'s eval.csv over rows the networks were trained on;
the factor per dtype is the one that makes their mean signed error zero (1 / mean(predicted /
measured)). Each --score is the same report over rows no network saw (a fresh draw), followed by
the measurement files it scored (their family column splits model families from random shapes);
it prints MAPE and bias (positive: too slow) per dtype and kind of shape, as predicted and with the
factor applied. --write sets a model file's latency_scale to its data type's factor (times the
factor the file held, which the fitted predictions already carried), to four decimals (fp8's by
served_config_tree_fresh.sh into its model before that is compressed,
data/models/gemm_configless_fp8.json.gz, and so bf16's second view's; a .json.gz file is written back
compressed; a file holding a second view is refused: its factor and its view's are apart, and the
view's answers are in the fitted predictions too).
"""
import argparse
import collections
import csv
import gzip
import re
import statistics

from model_file import read_text, write_text
from served_report import read_eval  # eval.csv by (dtype, m, n, k)


def kind_of_dtype(dtype):
    """The network that answers a GEMM of this type: bf16's for 16-bit types, fp8's for 8-bit."""
    if dtype in ("bf16", "fp16"):
        return "bf16"
    if dtype.startswith("fp8"):
        return "fp8"
    raise SystemExit(f"served_scale: no network for GEMMs of type {dtype!r}")


def write_factor(path, value):
    """The model files are one line of JSON with their keys sorted (as pipeweave writes them): the
    field goes in its place by text, so that nothing else in the file changes. A gzip-compressed
    file (data/models/*.json.gz) is read and written back compressed."""
    text, compressed = read_text(path)
    if '"second_view":' in text:
        raise SystemExit(f"{path}: holds a second view (its own latency_scale): write the factor into each view's file before "
                         "they are joined (second_view_model.py)")
    # The fit's predictions already carry the file's own factor: the new one goes on top of it.
    existing = re.search(r'"latency_scale":([^,}]*),', text)
    value = round((float(existing.group(1)) if existing else 1.0) * value, 4)
    if not 0.5 <= value <= 2:  # what the library accepts (a correction of the mean)
        raise SystemExit(f"{path}: latency_scale {value} is outside 0.5-2: a broken fit, not a correction of the mean")
    text = re.sub(r'"latency_scale":[^,}]*,', "", text)
    if '"layers":' not in text:
        raise SystemExit(f"{path}: no \"layers\" key to put latency_scale before")
    text = text.replace('"layers":', f'"latency_scale":{value},"layers":', 1)
    write_text(path, text, compressed)
    return value


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fit", action="append", required=True, help="an eval.csv over training rows")
    parser.add_argument("--score", action="append", nargs="+", default=[], metavar="EVAL.csv DATA.csv",
                        help="an eval.csv over fresh rows, then the measurement files it scored")
    parser.add_argument("--write", action="append", default=[], metavar="DTYPE=MODEL.json",
                        help="set this model file's latency_scale to the factor of this data type (bf16 or fp8)")
    args = parser.parse_args()
    ratios = collections.defaultdict(list)
    for path in args.fit:
        for (dtype, *_), (measured, predicted) in read_eval(path).items():
            ratios[kind_of_dtype(dtype)].append(predicted / measured)
    factor = {dtype: 1 / statistics.fmean(values) for dtype, values in ratios.items()}
    for dtype in sorted(factor):
        print(f"{dtype}: {len(ratios[dtype])} training rows, mean predicted/measured {1 / factor[dtype]:.4f}, "
              f"median {statistics.median(ratios[dtype]):.4f}: factor {factor[dtype]:.4f}")
    for target in args.write:
        dtype, _, path = target.partition("=")
        if dtype not in factor or not path:
            parser.error(f"--write takes bf16=MODEL.json or fp8=MODEL.json, got {target!r}")
        print(f"{path}: latency_scale {write_factor(path, factor[dtype])}")
    for score in args.score:
        if len(score) < 2:
            parser.error("--score takes an eval.csv and the measurement files it scored")
        predicted = read_eval(score[0])
        groups = collections.defaultdict(list)
        for path in score[1:]:
            with (gzip.open if path.endswith(".gz") else open)(path, "rt", newline="") as f:
                for r in csv.DictReader(f):
                    key = (r["dtype"], r["m"], r["n"], r["k"])
                    if key not in predicted:
                        continue
                    dtype = kind_of_dtype(r["dtype"])
                    kind = "random shapes" if r["family"] == "random" else "model families"
                    for group in ("all", kind):
                        groups[(dtype, group)].append(predicted[key])
        print(f"\n{score[0]}")
        print(f"{'dtype':5} {'rows':16} {'count':>7} {'MAPE%':>7} {'bias%':>7}   {'scaled MAPE%':>12} {'bias%':>7}")
        for dtype, group in sorted(groups, key=lambda k: (k[0], k[1] != "all", k[1])):
            pairs = groups[(dtype, group)]
            errors = [(guess / measured - 1) * 100 for measured, guess in pairs]
            scaled = [(guess * factor.get(dtype, 1) / measured - 1) * 100 for measured, guess in pairs]
            print(f"{dtype:5} {group:16} {len(pairs):7} {statistics.fmean(abs(e) for e in errors):7.2f} "
                  f"{statistics.fmean(errors):+7.2f}   {statistics.fmean(abs(e) for e in scaled):12.2f} {statistics.fmean(scaled):+7.2f}")


if __name__ == "__main__":
    main()
