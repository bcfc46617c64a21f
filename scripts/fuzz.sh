#!/usr/bin/env bash
# libFuzzer on the input parsers: builds build-fuzz/ (clang, -DSHARDLAB_FUZZ=ON: coverage, ASan,
# UBSan) and runs each harness fuzz/fuzz_NAME.cpp on its seeds in fuzz/corpus/NAME for a fixed
# budget, one per core at a time, on inputs of up to 64 KB (deep nesting needs room). A crash, a
# sanitizer report, an exception other than UsageError, an input running over 30 s (wall clock:
# room for a busy or niced machine) or one allocation over 256 MB fails the run, and the input is
# kept in build-fuzz/artifacts/. The committed seeds are only read: what libFuzzer finds goes to a
# temporary corpus. Part of scripts/test.sh (--seconds 7), so CI runs it.
# Usage: scripts/fuzz.sh [--runs N | --seconds S] [NAME...]   (default: --seconds 10, every harness)
set -euo pipefail
cd "$(dirname "$0")/.."

budget=(-max_total_time=10)
names=()
while (($#)); do
  case "$1" in
    --runs) budget=(-runs="$2"); shift 2 ;;
    --seconds) budget=(-max_total_time="$2"); shift 2 ;;
    -h | --help) sed -n '2,10p' "$0"; exit 0 ;;
    -*) echo "fuzz: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
if ((${#names[@]} == 0)); then
  for f in fuzz/fuzz_*.cpp; do
    n=${f#fuzz/fuzz_}
    names+=("${n%.cpp}")
  done
fi

scripts/setup.sh --no-build
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# Debug: assertions on (in nlohmann::json and CLI11 too); fuzz/CMakeLists.txt adds -O1.
[ -f build-fuzz/CMakeCache.txt ] || CC=clang CXX=clang++ cmake -S . -B build-fuzz "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Debug -DSHARDLAB_FUZZ=ON -DSHARDLAB_CUDA=OFF -DSHARDLAB_TESTS=OFF >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target "${names[@]/#/fuzz_}"

artifacts=build-fuzz/artifacts
mkdir -p "$artifacts"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
final_stat() { sed -n "s/^stat::$2: *//p" "$1"; } # libFuzzer's -print_final_stats lines
# One harness; its summary (or its failure) goes to $work/NAME.result, exit status as libFuzzer's.
fuzz_one() {
  local n=$1 log="$work/$1.log" start
  mkdir "$work/$n"
  start=$(date +%s)
  # The first corpus directory receives new inputs; the second, the committed seeds, is only read.
  if ! build-fuzz/fuzz/fuzz_"$n" "${budget[@]}" -max_len=65536 -timeout=30 -malloc_limit_mb=256 \
      -rss_limit_mb=2048 -print_final_stats=1 -print_funcs=0 -artifact_prefix="$artifacts/$n-" \
      "$work/$n" "fuzz/corpus/$n" >"$log" 2>&1; then
    { grep -v '^#[0-9]' "$log" | tail -80
      echo "fuzz: $n FAILED; the input is in $artifacts/ (replay: build-fuzz/fuzz/fuzz_$n FILE)"
    } >"$work/$n.result"
    return 1
  fi
  local done_line cov
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)
  cov=$(sed -E 's/.* cov: ([0-9]+) ft: ([0-9]+) corp: ([^ ]+) .*/cov \1, ft \2, corpus \3/' <<<"$done_line")
  echo "fuzz: $n clean: $(final_stat "$log" number_of_executed_units) runs in $(($(date +%s) - start)) s" \
       "($(final_stat "$log" average_exec_per_sec) exec/s), $cov, peak RSS $(final_stat "$log" peak_rss_mb) MB" \
       >"$work/$n.result"
}
# As many harnesses at once as there are cores (each is one thread); results in name order.
failed=0
for n in "${names[@]}"; do
  while (($(jobs -rp | wc -l) >= $(nproc))); do wait -n || true; done
  fuzz_one "$n" &
done
wait
for n in "${names[@]}"; do
  cat "$work/$n.result"
  grep -q "^fuzz: $n clean" "$work/$n.result" || failed=1
done
((failed == 0)) || exit 1
echo "fuzz: all clean"
