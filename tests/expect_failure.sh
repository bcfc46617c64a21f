#!/usr/bin/env bash
# Runs a command that must fail: checks its exit code and that its output contains a message.
# Usage: expect_failure.sh EXPECTED_EXIT_CODE|nonzero 'EXPECTED TEXT' COMMAND...
set -u
want_code=$1 want_text=$2
shift 2
out=$("$@" 2>&1)
code=$?
if [ "$want_code" = nonzero ]; then
  [ "$code" -ne 0 ] || { echo "expected a non-zero exit, got 0; output:"; echo "$out"; exit 1; }
elif [ "$code" -ne "$want_code" ]; then
  echo "expected exit code $want_code, got $code; output:"; echo "$out"; exit 1
fi
grep -qF -- "$want_text" <<<"$out" || { echo "expected output to contain: $want_text"; echo "got:"; echo "$out"; exit 1; }
echo "ok: exit $code, message found: $want_text"
