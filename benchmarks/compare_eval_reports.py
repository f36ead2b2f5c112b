#!/usr/bin/env python3
"""How far two builds' predictions of the same rows are apart: a speed change must leave accuracy as
it was (bit for bit, or within 0.01 points of MAPE, stated).

    python3 benchmarks/compare_eval_reports.py BEFORE/eval.csv AFTER/eval.csv

Each file is `pipeweave eval --report DIR`'s eval.csv of the same --data, one build each (e.g. a
`git worktree` of the commit before, built beside this one). Prints the rows, how many read the same
in the report's digits, the largest and mean |after / before - 1| of the prediction, the rows that moved by
more than 0.1% and 1%, and each build's MAPE at four decimals.
"""
import csv
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1], newline="") as f:
        before = list(csv.DictReader(f))
    with open(sys.argv[2], newline="") as f:
        after = list(csv.DictReader(f))
    if [r["kernel"] for r in before] != [r["kernel"] for r in after]:
        sys.exit("compare_eval_reports: the two reports do not hold the same rows in the same order")
    if not before:
        sys.exit("compare_eval_reports: no rows")
    moved = [abs(float(b["predicted_us"]) / float(a["predicted_us"]) - 1) for a, b in zip(before, after)]

    def mape(rows):
        return 100 * sum(abs(float(r["predicted_us"]) / float(r["measured_us"]) - 1) for r in rows) / len(rows)

    print(f"rows {len(moved)}, the same in the reports' digits {sum(1 for a, b in zip(before, after) if a['predicted_us'] == b['predicted_us'])}; "
          f"|after / before - 1|: largest {max(moved):.2e}, mean {sum(moved) / len(moved):.2e}; "
          f"moved > 0.1%: {sum(1 for m in moved if m > 1e-3)}, > 1%: {sum(1 for m in moved if m > 1e-2)}; "
          f"MAPE {mape(before):.4f}% -> {mape(after):.4f}%")


if __name__ == "__main__":
    main()
