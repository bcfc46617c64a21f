#!/usr/bin/env bash
# eval's bad input, end to end: T beyond the position table, and token ids beyond the vocabulary.
set -euo pipefail
shardlab=$1 expect=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$shardlab" init --preset tiny --layers 1 --hidden 32 --heads 2 --seq 16 --out "$work/w.safetensors" >/dev/null
"$shardlab" init --preset tiny --layers 1 --hidden 32 --heads 2 --seq 16 --vocab 100 --out "$work/v100.safetensors" >/dev/null
"$expect" 2 "--seq 32 is outside 1..16" "$shardlab" eval --weights "$work/w.safetensors" --data /usr/share/common-licenses/GPL-3 --seq 32
"$expect" 2 "holds token id 1" "$shardlab" eval --weights "$work/v100.safetensors" --data /usr/share/common-licenses/GPL-3
"$expect" 2 "fewer than one window" "$shardlab" eval --weights "$work/w.safetensors" --data <(printf 'tiny') --seq 16
