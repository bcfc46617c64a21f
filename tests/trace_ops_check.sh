#!/usr/bin/env bash
# tools/trace_ops.py and tools/plot_trace_ops.py on the traced GPT-2 steps the second H200 lease
# brought back (bench/results/h200_2026-11-28, gzipped): the table gives the step span and the
# largest op as the lease printed them, and the plot of both traces is written.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
results=$here/../bench/results/h200_2026-11-28
table=$(python3 "$here/../tools/trace_ops.py" "$results/lease3_trace.json.gz" --paper h200)
grep -q "^rank 0: 3 traced step(s), 50.080 ms per step" <<< "$table" || { echo "$table"; exit 1; }
grep -q "^| flash_attention_backward | op | 12 | 13.075 | 26.1% |" <<< "$table" || { echo "$table"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$here/../tools/plot_trace_ops.py" "$work/ops.png" --paper h200 \
  "epilogues=$results/lease3_trace.json.gz" "separate=$results/lease2_trace.json.gz"
[ -s "$work/ops.png" ] || { echo "no plot written"; exit 1; }
echo "trace_ops: ok"
