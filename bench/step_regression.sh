#!/usr/bin/env bash
# No-slowdown check: `shardlab bench step` (tiny, 8 x 256 tokens, 2 threads, fp32 and bf16) of two
# binaries, alternating, seven rounds each — e.g. the previous commit's build against this one:
#   git worktree add /tmp/base <commit> && (cd /tmp/base && scripts/build.sh)
#   bench/step_regression.sh /tmp/base/build/shardlab build/shardlab
# Prints every run and the median tokens/s of each binary, with their ratio.
set -euo pipefail
base=$1 new=${2:-build/shardlab}
declare -A runs
for round in 1 2 3 4 5 6 7; do
  for p in fp32 bf16; do
    for which in base new; do
      bin=$base; [ $which = new ] && bin=$new
      tps=$("$bin" bench step --preset tiny --precision $p --batch 8 --threads 2 --steps 10 --json |
            /usr/bin/python3 -c 'import json,sys; print(round(json.load(sys.stdin)["tokens_per_s"]))')
      echo "round $round $p $which: $tps tokens/s"
      runs[$p-$which]+="$tps "
    done
  done
done
for p in fp32 bf16; do
  /usr/bin/python3 - "$p" "${runs[$p-base]}" "${runs[$p-new]}" <<'PY'
import statistics, sys
p, base, new = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
b, n = statistics.median(base), statistics.median(new)
print(f"{p}: base {b:.0f} tokens/s, new {n:.0f} tokens/s, new/base = {n / b:.3f}")
PY
done
