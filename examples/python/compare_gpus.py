"""A capacity planner's question: how would this model serve this traffic on GPUs I do not own?

Builds the serving run a trace makes under continuous batching (a Hugging Face config.json and a
trace CSV), predicts it end to end on several GPUs, and prints total time, time to first token
and time per output token for each.

    python examples/python/compare_gpus.py --config data/e2e/Llama-3.1-8B/config.json --trace data/e2e/trace_48.csv \
        [--gpus H100-SXM,H200-SXM,A100-SXM4-80GB,L40S] [--tp 1] [--engine vllm] [--json out.json]
"""

import argparse
import json

import pipeweave as pw


def main():
    parser = argparse.ArgumentParser(description="predict one serving run on several GPUs")
    parser.add_argument("--config", required=True, help="the model's Hugging Face config.json")
    parser.add_argument("--trace", required=True, help="CSV of num_prefill_tokens, num_decode_tokens, output_tokens")
    parser.add_argument("--gpus", default="H100-SXM,H200-SXM,A100-SXM4-80GB,L40S")
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--engine", default="vllm", choices=["vllm", "sglang", "none"])
    parser.add_argument("--json", help="write the figures as JSON to this file")
    args = parser.parse_args()

    workload = pw.Workload.generate(args.config, args.trace, tp=args.tp, model="model")
    predictor = pw.Predictor()
    print(f"{len(workload)} iterations at TP {args.tp}, engine {args.engine}")
    print(f"  {'gpu':<16} {'total_s':>9} {'ttft_p50_ms':>12} {'tpot_p50_ms':>12}")
    results = []
    for name in args.gpus.split(","):
        gpu = pw.GpuSpec(name)
        run = predictor.predict_workload(workload, gpu, engine=args.engine)
        ttft, tpot = run.time_to_first_token_us["median"], run.time_per_output_token_us["median"]
        print(f"  {gpu.name:<16} {run.total_us / 1e6:>9.3f} {ttft / 1000:>12.2f} {tpot / 1000:>12.2f}")
        results.append({"gpu": gpu.name, "total_us": run.total_us, "ttft_median_us": ttft, "tpot_median_us": tpot,
                        "extrapolated_us": run.extrapolated_us})
    fastest = min(results, key=lambda r: r["total_us"])
    print(f"  -> fastest: {fastest['gpu']}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)


if __name__ == "__main__":
    main()
