#!/usr/bin/env bash
# Before/after check: `shardlab bench step` of two binaries, alternating (base new base new ...),
# ROUNDS rounds (default 7) per configuration, so both see the same phases of a noisy machine —
# e.g. the previous commit's build against this one:
#   git worktree add /tmp/base <commit> && (cd /tmp/base && scripts/build.sh)
#   bench/step_regression.sh /tmp/base/build/shardlab build/shardlab
# Configurations: tiny, 8 x 256 tokens, 2 threads, fp32 and bf16; LONG=1 adds tiny at 2 x 1024
# and GPT-2 124M at 1 x 1024 in bf16 (attention's share grows with T); LLAMA=1 adds tiny-llama at
# 4 x 256, fp32 and bf16 (RMSNorm, SwiGLU, RoPE, grouped queries). Prints each configuration's
# median tokens/s for both binaries and the median of the per-round ratios new/base; every run
# goes to bench/results/${NAME:-step_regression}.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
base=$1 new=${2:-build/shardlab} rounds=${ROUNDS:-7}
out=bench/results/${NAME:-step_regression}.jsonl
mkdir -p bench/results
: >"$out"
configs=("--preset tiny --batch 8 --precision fp32 --steps 10"
  "--preset tiny --batch 8 --precision bf16 --steps 10")
if [ "${LONG:-0}" = 1 ]; then
  configs+=("--preset tiny --seq 1024 --batch 2 --precision bf16 --steps 6"
    "--preset gpt2 --batch 1 --seq-len 1024 --precision bf16 --steps 3 --warmup 1")
fi
if [ "${LLAMA:-0}" = 1 ]; then
  configs+=("--preset tiny-llama --batch 4 --seq-len 256 --precision fp32 --steps 10"
    "--preset tiny-llama --batch 4 --seq-len 256 --precision bf16 --steps 10")
fi
for c in "${configs[@]}"; do
  for round in $(seq "$rounds"); do
    for which in base new; do
      bin=$base
      [ $which = new ] && bin=$new
      # shellcheck disable=SC2086 # a configuration is a list of flags
      "$bin" bench step $c --threads 2 --json |
        sed "s|^{|{\"binary\":\"$which\",\"round\":$round,\"config\":\"$c\",|" | tee -a "$out" |
        /usr/bin/python3 -c "import json,sys; print('$c, round $round, $which:', round(json.load(sys.stdin)['tokens_per_s']), 'tokens/s')"
    done
  done
done
/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for c in dict.fromkeys(r["config"] for r in rows):
    tps = {w: [r["tokens_per_s"] for r in rows if r["config"] == c and r["binary"] == w]
           for w in ("base", "new")}
    ratios = [n / b for b, n in zip(tps["base"], tps["new"])]
    print(f"{c}: base {statistics.median(tps['base']):.0f} tokens/s, new "
          f"{statistics.median(tps['new']):.0f} tokens/s, new/base = {statistics.median(ratios):.3f}"
          f" (rounds {min(ratios):.3f}-{max(ratios):.3f})")
PY
