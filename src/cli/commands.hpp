#pragma once
// The CLI's commands that live in their own files; main.cpp dispatches to them.

namespace pipeweave::cli {

// pipeweave calibrate [--quick] [--runs N] [--log-dir DIR] [--from-log FILE]... [--link allreduce.csv] [--out spec.json]
//                     [--json] [--report DIR]
int calibrate_command(int argc, char** argv, int first);

// pipeweave shapes --op gemm|rmsnorm|silu_mul|attention|attention_decode|attention_decode_long [--count N] [--seed S] [--dtypes LIST]
//                  [--head-dim 64|128|256]
int shapes_command(int argc, char** argv, int first);

// pipeweave collect --op OP --shapes FILE --out FILE.csv [--raw FILE] [--algos N] [--reps N] [--warmup N] [--l2 cold|warm]
// pipeweave collect --from-raw FILE --out FILE.csv
int collect_command(int argc, char** argv, int first);

// pipeweave eval --data FILE.csv [--data ...] [--model M [--model ...] [--held-out]] [--spec GPU=FILE]... [--specs DIR] [--default-configs|--ranking] [--json] [--report DIR]
int eval_command(int argc, char** argv, int first);

// pipeweave train --op OP --data FILE.csv [--data ...] --out MODEL.json [--specs DIR] [--holdout-gpu GPU] [--init MODEL.json] ...
int train_command(int argc, char** argv, int first);

// pipeweave e2e --gpu G (--workload W.json | --model config.json --trace T.csv [--tp N] [--max-batched-tokens N]
//               [--max-seqs N] [--no-chunked-prefill] [--dtype D]) [--overhead-us X] [--kernel-overhead-us X]
//               [--sustained-slowdown F [--sustained-utilization U]] [--write-workload F] [--json] [--report DIR]
int e2e_command(int argc, char** argv, int first);

}  // namespace pipeweave::cli
