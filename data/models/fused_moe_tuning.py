#!/usr/bin/env python3
"""The fused-MoE tuning result: on each shape whose every measured config is known (the collector's
"full" shapes), the config a model predicts fastest against vLLM's default config and against the
measured fastest.

    python3 data/models/fused_moe_tuning.py --model MODEL.json --data FILE.csv.gz [--data ...] [--gpu H100-SXM]
        [--csv out.csv] [--json out.json]

A config measured in several runs counts with the mean of its times. Per shape: speedup = the
default's time / the pick's time; gap = the pick's time / the fastest's time - 1. Printed per
model family and over all shapes (means; the speedup's geometric mean beside).
Needs the Python package (pip install .).
"""
import argparse
import collections
import csv
import gzip
import json
import statistics

import pipeweave as pw


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", action="append", required=True)
    parser.add_argument("--gpu", default="H100-SXM")
    parser.add_argument("--csv")
    parser.add_argument("--json")
    args = parser.parse_args()
    predictor = pw.Predictor(models=[args.model])
    gpu = pw.GpuSpec(args.gpu)
    shapes = collections.defaultdict(lambda: collections.defaultdict(list))
    family = {}
    for path in args.data:
        with gzip.open(path, "rt", newline="") as f:
            for r in csv.DictReader(f):
                if r["full"] != "1" or r["gpu"] != gpu.name:
                    continue
                ep = int(r.get("ep") or 1)  # expert-parallel ranks (files before the column: none)
                shape = (r["dtype"], int(r["tokens"]), int(r["experts"]), int(r["top_k"]), int(r["hidden"]), int(r["intermediate"]), ep)
                config = (int(r["block_m"]), int(r["block_n"]), int(r["block_k"]), int(r["stages"]), int(r["group_m"]), int(r["warps"]))
                shapes[shape][config].append((float(r["duration_us"]), r["is_default"] == "1"))
                family[shape] = r["model"]
    rows = []
    for shape, configs in sorted(shapes.items()):
        dtype, tokens, experts, top_k, hidden, inter, ep = shape
        names = list(configs)
        kernels = [pw.FusedMoe(tokens=tokens, experts=experts, top_k=top_k, hidden=hidden, intermediate=inter, dtype=dtype,
                               expert_parallel=ep,
                               config=pw.FusedMoeConfig(block_m=c[0], block_n=c[1], block_k=c[2], stages=c[3], group_m=c[4],
                                                        warps=c[5])) for c in names]
        ranked = predictor.rank(kernels, gpu)
        measured = {c: statistics.mean(t for t, _ in configs[c]) for c in names}
        defaults = [c for c in names if any(d for _, d in configs[c])]
        if not defaults:
            continue
        pick = names[ranked[0].index]
        fastest = min(measured.values())
        rows.append({"family": family[shape], "dtype": dtype, "tokens": tokens, "experts": experts, "top_k": top_k,
                     "hidden": hidden, "intermediate": inter, "ep": ep, "configs": len(names), "default_us": measured[defaults[0]],
                     "pick_us": measured[pick], "fastest_us": fastest, "speedup": measured[defaults[0]] / measured[pick],
                     "gap_pct": 100 * (measured[pick] / fastest - 1), "pick": "x".join(map(str, pick))})
    if not rows:
        raise SystemExit("fused_moe_tuning: error: no full shape with the default config measured in the data")
    groups = collections.defaultdict(list)
    for r in rows:
        groups[r["family"]].append(r)
    groups["all"] = rows
    summary = []
    print(f"{'family':<20} {'shapes':>6} {'speedup':>8} {'geomean':>8} {'gap_pct':>8} {'gap_p90':>8} {'best_found':>10}")
    for name, group in groups.items():
        gaps = sorted(r["gap_pct"] for r in group)
        line = {"family": name, "shapes": len(group), "mean_speedup": statistics.mean(r["speedup"] for r in group),
                "geomean_speedup": statistics.geometric_mean(r["speedup"] for r in group),
                "mean_gap_pct": statistics.mean(gaps), "p90_gap_pct": gaps[min(len(gaps) - 1, int(0.9 * len(gaps)))],
                "best_found_pct": 100 * sum(g == 0 for g in gaps) / len(gaps)}
        summary.append(line)
        print(f"{name:<20} {line['shapes']:>6} {line['mean_speedup']:>8.3f} {line['geomean_speedup']:>8.3f} "
              f"{line['mean_gap_pct']:>8.2f} {line['p90_gap_pct']:>8.2f} {line['best_found_pct']:>10.1f}")
    if args.csv:
        with open(args.csv, "w", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"summary": summary, "shapes": rows}, out, indent=2)


if __name__ == "__main__":
    main()
