#!/usr/bin/env bash
# The foundation benchmark of docs/BENCHMARKS.md: shardlab's ring AllGather, ReduceScatter and
# AllReduce against Open MPI's own, 2 ranks, 1 MiB .. 256 MiB, in one run; the memcpy ceiling is
# measured by the same run. Writes bench/results/collectives_np2.{txt,json,png}.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/results
launch/mpirun_local.sh -np 2 build/shardlab collectives bench \
  --op allgather,reduce_scatter,allreduce --algo ring,native --dtype fp32 \
  -b 1M -e 256M -f 2 --iters 10 --warmup 3 --json bench/results/collectives_np2.json \
  | tee bench/results/collectives_np2.txt
ceiling=$(sed -n 's/^# memcpy ceiling: \([0-9.]*\) GB\/s.*/\1/p' bench/results/collectives_np2.txt)
/usr/bin/python3 tools/plot_collectives_bench.py bench/results/collectives_np2.json \
  bench/results/collectives_np2.png --ceiling "$ceiling"
