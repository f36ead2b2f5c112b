#!/usr/bin/env python3
"""Writes a request trace for `pipeweave e2e --trace`, for timing the scheduler and predictor on
long runs (not a measurement of anything): prompts uniform in [--prompt-min, --prompt-max]
tokens, decode steps uniform in [--output-min, --output-max] (the output one token more: the
prompt's last iteration gives the first), seeded.

    python3 benchmarks/synthetic_trace.py --requests 100000 --seed 1 --out /tmp/trace_100k.csv
    /usr/bin/time -f "%e s" build/pipeweave e2e --gpu H100-SXM --model data/e2e/Llama-3.1-8B/config.json \\
        --trace /tmp/trace_100k.csv > /dev/null
"""
import argparse
import random


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--prompt-min", type=int, default=64)
    parser.add_argument("--prompt-max", type=int, default=2048)
    parser.add_argument("--output-min", type=int, default=16)
    parser.add_argument("--output-max", type=int, default=512)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    for name in ("requests", "prompt_min", "output_min"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.prompt_max < args.prompt_min or args.output_max < args.output_min:
        parser.error("each maximum must be at least its minimum")
    rng = random.Random(args.seed)
    with open(args.out, "w") as out:
        out.write("num_prefill_tokens,num_decode_tokens,output_tokens\n")
        for _ in range(args.requests):
            prompt = rng.randint(args.prompt_min, args.prompt_max)
            output = rng.randint(args.output_min, args.output_max)
            out.write(f"{prompt},{output},{output + 1}\n")


if __name__ == "__main__":
    main()
