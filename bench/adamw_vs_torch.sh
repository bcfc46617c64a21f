#!/usr/bin/env bash
# Host AdamW (the offload update) on a 100M-parameter shard, 2 threads: shardlab against
# torch.optim.AdamW (foreach) in the same run, and against the bandwidth bound.
# Writes bench/results/adamw.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/results
out=bench/results/adamw.jsonl
build/shardlab bench adamw --params 100e6 --threads 2 --iters 10 | sed 's/^{/{"peer":"shardlab",/' | tee "$out"
/usr/bin/python3 tools/torch_bench_adamw.py --params 100e6 --threads 2 --iters 10 | tee -a "$out"
