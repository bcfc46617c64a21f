#!/usr/bin/env bash
# What ONE device `run` executes on a lent GPU machine (docs/GPU.md): unpack the bundle that
# scripts/gpu_bundle.sh made here, set up its libraries and relocated Open MPI, then run each
# check under its own `timeout`, all of them inside one time budget, a failing or hanging step
# never stopping the ones after it:
#   env        nvidia-smi, driver, GPU, PyTorch; every library resolves; mpirun from the bundle runs
#   ops        test_cuda_ops on the GPU
#   train      `train --device cuda` ZeRO 0-3 +- offload, 2 ranks sharing the GPU over the staged
#              (MPI) transport, measured = predicted memory and bytes; 1 rank over NCCL
#              (tests/cuda_train_check.py)
#   bench      GPT-2 124M bf16 `bench step`, micro-batch 16 x 1024, vocabulary 50257 and 50304 on
#              the default flash kernels (auto: each kernel's fastest form), and 50304 again with
#              every mma kernel in one form: mma, mma_regs, mma_wide
#   attention  flash attention alone at GPT-2's shape, bf16 (`bench attention --device cuda`):
#              forward and backward apart on auto, mma, mma_regs, mma_wide and wmma, beside PyTorch's
#              scaled_dot_product_attention (tools/torch_bench_attention.py)
#   trace      three `--trace` steps of GPT-2 as `train` runs it by default (V = 50257 padded to
#              50304: bench's 50304 GEMMs), turned into a per-op time table
#   time       the time model on this GPU: `train --calibrate` (the machine's rates measured at
#              the start, for this model) predicts the GPT-2 step, measured beside it (docs/TIME.md)
#   eager      the PyTorch eager peer (tools/torch_bench_step.py) on the same GPU and shapes
#   llama      the Llama (issue 25; its kernels' tests are in test_cuda_ops): three bf16 `train`
#              steps and a `bench step` of SmolLM-135M's shape, micro-batch 16 x 1024
#   memcheck   compute-sanitizer memcheck on test_cuda_ops
#   racecheck  compute-sanitizer racecheck on test_cuda_ops
#   profile    Nsight Compute (ncu) on the slowest kernels of one GPT-2 layer's step: speed of
#              light, occupancy, memory, pipes, issue slots and warp stall reasons
#   compile    the torch.compile peer, with what time is left
# A tool that is absent (nvidia-smi, compute-sanitizer, PyTorch with CUDA), or a device the
# sanitizer refuses ("Device not supported"), makes its step SKIP with the reason, not fail.
# Into $OUT (the device tool brings back at most 8 files): summary.md (rewritten after every step,
# so a run cut short still has one), results.json and lease-logs.tar.gz (every step's log, the
# JSON results, the trace). summary.md is printed last: the tool returns the output's last 12,000
# characters.
#
# Usage: scripts/gpu_lease.sh [--bundle ARCHIVE] [--only STEP[,STEP...]] [--budget SECONDS]
#                             [--out DIR] [--dry-run]
#   --bundle   default gpu_bundle/shardlab-gpu.tar.gz (relative to the repository root)
#   --only     run just these steps (e.g. `--only train` to retry one in the lease's last minutes)
#   --budget   seconds for all steps together (default 420: a 540 s `run` timeout leaves room)
#   --out      default $OUT, else lease-out/
#   --dry-run  the emulator bundle's sizes: GPT-2 shrunk to a tiny model, short limits (CTest
#              gpu_lease_dryrun); also LEASE_DRYRUN=1
# Testing hooks: LEASE_INJECT="step=fail step=hang" replaces those steps' bodies by a failure or a
# hang; LEASE_LIMITS="step=SECONDS ..." overrides steps' time limits.
set -uo pipefail # no -e: every step runs whatever the one before it did
self=$(realpath "$0")

# ---------------------------------------------------------------------------------------------
# The steps. Each runs in its own process (this script re-entered with --step NAME) under
# `timeout`; it logs to stdout, writes one line of result with `result`, and returns 0 (ok),
# 77 (skipped: the result line says why) or anything else (failed).
# ---------------------------------------------------------------------------------------------
result() { echo "$*" > "$LOGS/$STEP.result"; }
share_of() { # STEP PARTS: the time limit of each of a step's PARTS runs: its share less 5 s
  local e=$(($(limit_of "$1") / $2 - 5))
  echo $((e < 5 ? 5 : e)) # a step cut short still gives them a limit (timeout 0 is none at all)
}
skip() { result "$*"; exit 77; }
said() { # RC EACH TEXT: a part's words in its step's line: TEXT if it ended well, else why not
  case $1 in 0) echo "$3" ;; 124 | 137) echo "killed after $2 s" ;; *) echo "failed ($1)" ;; esac
}
mpirun_cmd() { echo mpirun --oversubscribe --bind-to none $([ "$(id -u)" = 0 ] && echo --allow-run-as-root); }
gpt2() { # the model every timing step uses: GPT-2 124M, or a tiny stand-in in the dry run
  if [ "$DRY" = 1 ]; then echo --layers 1 --hidden 32 --heads 2 --seq 16; else echo --preset gpt2; fi
}
peer_model() { if [ "$DRY" = 1 ]; then echo --layers 1 --hidden 32 --heads 2; else echo --layers 12 --hidden 768 --heads 12; fi; }
timed_steps() { if [ "$DRY" = 1 ]; then echo --steps 2 --warmup 1; else echo --steps 10 --warmup 3; fi; }
batch() { if [ "$DRY" = 1 ]; then echo 2; else echo 16; fi; }
seqlen() { if [ "$DRY" = 1 ]; then echo 16; else echo 1024; fi; }
vocabs() { if [ "$DRY" = 1 ]; then echo 257 320; else echo 50257 50304; fi; }
llama() { # the Llama the llama step trains and times: SmolLM-135M's shape, or a tiny one
  if [ "$DRY" = 1 ]; then echo --arch llama --layers 1 --hidden 32 --heads 2 --kv-heads 1 --ffn 48 --seq 16
  else echo --preset smollm-135m --seq 1024; fi
}
torch_cuda() { env -u LD_LIBRARY_PATH python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 3)' 2>/dev/null; }

step_env() {
  echo "== host"; uname -a; (. /etc/os-release && echo "$PRETTY_NAME"); ldd --version | head -1; nproc
  echo "== bundle"; cat "$B/MANIFEST.md"
  echo "== libraries (LD_LIBRARY_PATH=$LD_LIBRARY_PATH)"
  local missing=""
  for b in shardlab test_cuda_ops; do
    ldd "$B/bin/$b"
    missing+=$(ldd "$B/bin/$b" | awk '/not found/ {printf " %s", $1}')
  done
  echo "== mpirun: $(command -v mpirun)"
  mpirun --version | head -1
  local mpi_ok=no
  timeout --foreground -k 5 30 $(mpirun_cmd) -np 2 hostname && mpi_ok=yes
  local gpu="nvidia-smi absent (skipped)"
  if command -v nvidia-smi >/dev/null; then
    echo "== GPU"; nvidia-smi
    gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)
    gpu+=", CUDA $(nvidia-smi | grep -o 'CUDA Version: [0-9.]*' | cut -d' ' -f3)"
  fi
  echo "== PyTorch"
  local torch
  torch=$(env -u LD_LIBRARY_PATH python3 -c 'import torch; print(torch.__version__, "cuda" if torch.cuda.is_available() else "no CUDA")' 2>/dev/null || echo "absent")
  echo "$torch"
  echo "== shardlab device"; shardlab device
  result "GPU: $gpu; PyTorch: $torch; $(ldd --version | head -1 | grep -o '[0-9.]*$' | sed 's/^/glibc /'); mpirun from the bundle: $mpi_ok${missing:+; MISSING:$missing}"
  [ -z "$missing" ] && [ $mpi_ok = yes ]
}

step_ops() {
  local filter=()
  [ -n "${LEASE_OPS_FILTER:-}" ] && filter=(--gtest_filter="$LEASE_OPS_FILTER")
  test_cuda_ops "${filter[@]}" --gtest_output=json:"$LOGS/test_cuda_ops.json"
  local rc=$?
  result "$(python3 - "$LOGS/test_cuda_ops.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    print("no gtest report (crashed?)"); sys.exit()
tests = [t for s in r["testsuites"] for t in s["testsuite"]]
bad = [f"{t['classname']}.{t['name']}" for t in tests if t.get("failures")]
skipped = sum(t.get("result") == "SKIPPED" for t in tests)
print(f"{len(tests) - len(bad) - skipped} of {len(tests)} passed" + (f", {skipped} skipped (no GPU?)" if skipped else "")
      + (": FAILED " + ", ".join(bad) if bad else ""))
PY
)"
  return $rc
}

sanitizer() { # TOOL: compute-sanitizer's memcheck or racecheck on test_cuda_ops
  local cs
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null) || skip "compute-sanitizer absent"
  local filter=()
  [ -n "${LEASE_OPS_FILTER:-}" ] && filter=(--gtest_filter="$LEASE_OPS_FILTER")
  local extra=()
  [ "$1" = racecheck ] && extra=(--racecheck-report hazard)
  "$cs" --tool "$1" "${extra[@]}" --error-exitcode 9 test_cuda_ops "${filter[@]}" 2>&1 | tee "$LOGS/$1.txt"
  local rc=${PIPESTATUS[0]}
  grep -q "Device not supported" "$LOGS/$1.txt" && skip "compute-sanitizer: Device not supported (a runtime it cannot instrument)"
  result "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/$1.txt" | tail -1 | sed 's/^=* *//') (exit $rc)"
  return $rc
}
step_memcheck() { sanitizer memcheck; }
step_racecheck() { sanitizer racecheck; }

step_train() {
  CUDA_TRAIN_QUICK=$DRY CUDA_TRAIN_RUN_TIMEOUT=${LEASE_TRAIN_RUN_TIMEOUT:-45} python3 "$B/tests/cuda_train_check.py" lease \
    "$B/bin/shardlab" $(mpirun_cmd) 2>&1 | tee "$LOGS/train.txt"
  local rc=${PIPESTATUS[0]}
  result "$(grep -c '^ok:' "$LOGS/train.txt") checks ok, $(grep -c '^FAIL:' "$LOGS/train.txt") failed$(grep -m3 '^FAIL:' "$LOGS/train.txt" | cut -c1-160 | sed 's/^/; /' | tr -d '\n')"
  return $rc
}

speed() { # FILE: "ms, tokens/s[, MFU]" of a bench step / torch_bench_step.py JSON object
  python3 - "$1" "${GPU_NAME:-}" <<'PY' 2>/dev/null || echo failed
import json, sys
r = json.load(open(sys.argv[1]))
gpu = sys.argv[2]
# bf16 dense peak (datasheet) for the MFU; the bench's own FLOP count (gflops) where it gives one.
peak = 989.5e3 if ("H100" in gpu or "H200" in gpu) and "PCIe" not in gpu else 756e3 if "H100 PCIe" in gpu else 0
mfu = f", {r['gflops'] / peak:.1%} MFU" if peak and "gflops" in r else ""
# auto's choice, without its times: "forward mma_wide, dK/dV mma_regs, dQ mma_wide".
chose = f" [{r['flash_kernels'].split(' (')[0][len('auto: '):]}]" if r.get("flash_kernels", "").startswith("auto: ") else ""
print(f"{r['ms_per_step']:.1f} ms, {r['tokens_per_s']:,.0f} tok/s{mfu}{chose}")
PY
}

step_bench() {
  local rc=0 one v flash name each=$(share_of bench 5) line=""
  local given padded
  read -r given padded <<< "$(vocabs)"
  # V = 50257 as given (--vocab-multiple 1: the odd leading dimension), 50304 the padded one, both
  # on the default flash kernels (auto: each kernel's fastest form, timed in the first step; the
  # forms it chose are in the JSON's flash_kernels); then the padded one with every kernel in one
  # form (plain mma, the row operands in registers, two row blocks a warp), to compare them.
  # (WMMA's step, 12 ms slower on the H200, is left to the attention step.)
  for run in "$given auto" "$padded auto" "$padded mma" "$padded mma_regs" "$padded mma_wide"; do
    read -r v flash <<< "$run"
    name=bench_$v && [ "$flash" = auto ] || name=bench_${v}_$flash
    one=0
    SHARDLAB_CUDA_FLASH=$flash timeout --foreground -k 5 $each shardlab bench step --device cuda $(gpt2) --vocab "$v" \
      --vocab-multiple 1 --precision bf16 --batch "$(batch)" --seq-len "$(seqlen)" $(timed_steps) --json > "$LOGS/$name.json" || one=$? rc=$?
    cat "$LOGS/$name.json"
    line+="V=$v $flash: $(said $one $each "$(speed "$LOGS/$name.json")"); "
  done
  result "$line"
  return $rc
}

attn_shape() { # flash attention alone: GPT-2's heads (B 16, H 12, hd 64), or a tiny stand-in
  if [ "$DRY" = 1 ]; then echo --batch 2 --heads 2 --head-dim 16; else echo --batch 16 --heads 12 --head-dim 64; fi
}
attn_iters() { if [ "$DRY" = 1 ]; then echo 1; else echo 5; fi; }
attn_speed() { # FILE PREFIX: "forward X ms (Y TFLOP/s), backward ..." of an attention JSON object
  python3 - "$1" "$2" <<'PY' 2>/dev/null || echo failed
import json, sys
r, p = json.load(open(sys.argv[1])), sys.argv[2]
print(", ".join(f"{k} {r[p + k + '_ms']:.3f} ms ({r[p + k + '_tflops']:.1f} TFLOP/s)" for k in ("forward", "backward")))
PY
}
step_attention() {
  local rc=0 one flash each=$(share_of attention 6) line=""
  # Each tensor-core variant of the flash kernels, forward and backward timed apart (materialize
  # beside them in the JSON), then PyTorch's scaled_dot_product_attention on the same shape. auto
  # first: its flash_kernels names each kernel's fastest form and gives every form's time.
  for flash in auto mma mma_regs mma_wide wmma; do
    one=0
    SHARDLAB_CUDA_FLASH=$flash timeout --foreground -k 5 $each shardlab bench attention --device cuda $(attn_shape) \
      --seq-len "$(seqlen)" --precision bf16 --iters "$(attn_iters)" > "$LOGS/attention_$flash.json" || one=$? rc=$?
    cat "$LOGS/attention_$flash.json"
    line+="$flash: $(said $one $each "$(attn_speed "$LOGS/attention_$flash.json" flash_)"); "
  done
  if python3 -c 'import torch' 2>/dev/null && torch_cuda; then
    timeout --foreground -k 5 $each env -u LD_LIBRARY_PATH python3 "$B/tools/torch_bench_attention.py" --device cuda \
      $(attn_shape) --seq "$(seqlen)" --precision bf16 --iters "$(attn_iters)" > "$LOGS/attention_sdpa.json" || rc=$?
    cat "$LOGS/attention_sdpa.json"
    line+="PyTorch SDPA: $(attn_speed "$LOGS/attention_sdpa.json" "")"
  else
    line+="PyTorch SDPA: no PyTorch with CUDA here"
  fi
  result "$line"
  return $rc
}

step_time() {
  # One rank (the lease has one GPU, so no collective to price): the prediction's compute against
  # the run's. The profile it measured (time_run/profile.json) is the GPU's rates per GEMM shape,
  # per memory-bound kernel, and the flash kernels'.
  timeout --foreground -k 5 $(($(limit_of time) - 10)) $(mpirun_cmd) -np 1 shardlab train --device cuda $(gpt2) \
    --vocab "$(vocabs | cut -d' ' -f1)" --precision bf16 --micro-batch "$(batch)" --steps 6 --val-every 0 \
    --calibrate --out "$LOGS/time_run" --quiet || return $?
  local line
  line=$(python3 - "$LOGS/time_run" <<'PY'
import json, os, sys
run = sys.argv[1]
t = json.load(open(os.path.join(run, "report.json")))["ranks"][0]["time"]
prof = json.load(open(os.path.join(run, "profile.json")))
v, p = t["vs"]["step"], t["predicted"]
flash = prof["attention"]["bf16"]["flash"]
def rate(x, unit):  # "612 TFLOP/s"; the dry run's emulated rates are tiny: "3.34 MFLOP/s"
    k = next((k for k in "TGMk" if x >= 1e3 ** " kMGT".index(k)), " ")
    return f"{x / 1e3 ** ' kMGT'.index(k):.3g} {k.strip()}{unit}"
print(f"step predicted {v['predicted_ms']:.1f} / measured {v['measured_ms']:.1f} ms ({v['error']:+.0%}); "
      f"predicted GEMM {p['gemm_ms']:.1f}, attention {p['attention_ms']:.1f}, memory-bound "
      f"{p['memory_bound_ms']:.1f}, AdamW {p['optimizer_ms']:.1f} ms; calibrated: GEMM bf16 "
      f"{rate(prof['gemm']['bf16']['flop_per_s'], 'FLOP/s')}, flash forward "
      f"{rate(flash['forward_flop_per_s'], 'FLOP/s')}, backward {rate(flash['backward_flop_per_s'], 'FLOP/s')}, "
      f"memory-bound {rate(prof['memory_bound']['bytes_per_s'], 'B/s')}")
PY
) || { result "no prediction beside the measured step in time_run/report.json"; return 1; }
  result "$line"
}

step_trace() {
  timeout --foreground -k 5 $(($(limit_of trace) - 15)) $(mpirun_cmd) -np 1 shardlab train --device cuda $(gpt2) \
    --vocab "$(vocabs | cut -d' ' -f1)" --precision bf16 --micro-batch "$(batch)" --steps 4 --warmup 1 \
    --trace "$LOGS/trace.json" --trace-steps 3 --out "$LOGS/trace_run" --quiet || return $?
  # Beside each op, what the paper model (docs/GPU.md) expects on this GPU from the traced shapes.
  local paper=()
  case "${GPU_NAME:-}" in *H200*) paper=(--paper h200) ;; *H100*) paper=(--paper h100) ;; *A100*) paper=(--paper a100) ;; esac
  python3 "$B/tools/trace_ops.py" "$LOGS/trace.json" "${paper[@]}" | tee "$LOGS/trace_ops.md"
  result "$(grep -m1 '^rank' "$LOGS/trace_ops.md"); top: $(grep '^| [a-z]' "$LOGS/trace_ops.md" | grep -v '^| op ' | head -3 | awk -F' *[|] *' '{printf "%s %s ms, ", $2, $5}')"
}

peer() { # eager|compile: tools/torch_bench_step.py with the machine's own libraries
  python3 -c 'import torch' 2>/dev/null || skip "PyTorch absent"
  torch_cuda || skip "PyTorch without CUDA here"
  local rc=0 one v each=$(share_of "$1" 2) line="" flag=()
  [ "$1" = compile ] && flag=(--compile)
  for v in $(vocabs | tr ' ' '\n' | sort -r); do # 50304 first: the compile step may only get one
    one=0
    timeout --foreground -k 5 $each env -u LD_LIBRARY_PATH python3 "$B/tools/torch_bench_step.py" --device cuda \
      $(peer_model) --vocab "$v" --seq "$(seqlen)" --batch "$(batch)" \
      --precision bf16 --threads 1 $(timed_steps) "${flag[@]}" > "$LOGS/${STEP}_$v.json" || one=$? rc=$?
    cat "$LOGS/${STEP}_$v.json"
    line+="V=$v: $(said $one $each "$(speed "$LOGS/${STEP}_$v.json")"); "
  done
  result "$line"
  return $rc
}
step_eager() { peer eager; }

step_llama() {
  local rc=0 each=$(share_of llama 2) line=""
  timeout --foreground -k 5 $each $(mpirun_cmd) -np 1 shardlab train --device cuda $(llama) --precision bf16 \
    --micro-batch "$(batch)" --steps 3 --warmup 1 --val-every 0 --out "$LOGS/llama_run" --quiet > "$LOGS/llama_train.txt" 2>&1 || rc=$?
  line+="train: $(python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["steps"]; print("loss %.3f -> %.3f" % (s[0]["loss"], s[-1]["loss"]))' "$LOGS/llama_run/report.json" 2>/dev/null || echo failed)"
  timeout --foreground -k 5 $each shardlab bench step --device cuda $(llama) --precision bf16 --batch "$(batch)" \
    --seq-len "$(seqlen)" $(timed_steps) --json > "$LOGS/bench_llama.json" || rc=$?
  cat "$LOGS/bench_llama.json"
  result "$line; bench: $(speed "$LOGS/bench_llama.json")"
  return $rc
}
step_compile() { peer compile; }

# Nsight Compute's counters for the kernels furthest from their paper time (docs/BENCHMARKS.md) in
# one GPT-2 layer's step, in three runs, so that one cut by its limit loses only its own report
# (ncu prints the sections' tables once the program has ended, as far as we know): every kernel
# of the flash attention (logs/profile.txt);
# the memory-bound ones the trace put at about 2 TB/s, cross-entropy, embedding backward,
# LayerNorm, the column sums, the GELU backward and the gradient norm (logs/profile_memory.txt);
# the flash kernels again under SHARDLAB_CUDA_FLASH=mma_wide (logs/profile_mma_wide.txt: all
# three with two row blocks a warp). The
# patterns are anchored at the kernels' own names, so cuBLAS's sm90_xmma_* GEMMs stay out.
# InstructionStats counts the instructions each kernel executed: against tools/sass.sh's static
# counts per tile (docs/DECISIONS.md, "The flash kernels' instructions, counted in SASS").
PROFILE_FLASH='regex:^(mma_(forward|backward)|row_dots)'
PROFILE_MEMORY='regex:^(cross_entropy_rows|mean_kernel|embedding_backward|sort_tile|place_by_rank|layernorm_(forward|backward|params)|add_partials|column_partials|gelu_backward|squared_norm)'
profile_run() { # FLASH KERNELS FILE SECONDS
  SHARDLAB_CUDA_FLASH=$1 timeout --foreground -k 5 "$4" "$ncu" --clock-control none \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    --section ComputeWorkloadAnalysis --section SchedulerStats --section WarpStateStats \
    --section InstructionStats \
    --kernel-name-base function -k "$2" \
    shardlab bench step --device cuda $(gpt2) --layers 1 --vocab "$(vocabs | cut -d' ' -f2)" \
    --vocab-multiple 1 --precision bf16 --batch "$(batch)" --seq-len "$(seqlen)" --steps 1 --warmup 0 \
    > "$LOGS/$3" 2>&1
}
step_profile() {
  local ncu rc=0 why each
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null) || skip "ncu absent"
  each=$(share_of profile 3)
  profile_run mma "$PROFILE_FLASH" profile.txt "$each" || rc=$?
  why=$(grep -m1 -o 'ERR_NVGPUCTRPERM\|LibraryNotLoaded\|Failed to initialize the profiler' "$LOGS/profile.txt") &&
    skip "ncu: no counters here ($why)"
  profile_run mma "$PROFILE_MEMORY" profile_memory.txt "$each" || rc=$?
  profile_run mma_wide "$PROFILE_FLASH" profile_mma_wide.txt "$each" || rc=$?
  local f line=""
  for f in profile profile_memory profile_mma_wide; do
    line+="$f: $(grep -c ', Context [0-9]*, Stream' "$LOGS/$f.txt") launches; "
  done
  result "profiled (logs/): $line"
  return $rc
}

# ---------------------------------------------------------------------------------------------
# The runner
# ---------------------------------------------------------------------------------------------
ALL_STEPS="env ops train bench attention trace time eager llama memcheck racecheck profile compile"
limit_of() { # a step's time limit in seconds: LEASE_LIMITS overrides, the dry run is shorter
  local o
  # Inside a step, its own limit is what the runner gave it (cut to what is left of the budget).
  [ "$1" = "${STEP:-}" ] && [ -n "${STEP_LIMIT:-}" ] && { echo "$STEP_LIMIT"; return; }
  for o in ${LEASE_LIMITS:-}; do [ "${o%%=*}" = "$1" ] && { echo "${o#*=}"; return; }; done
  if [ "$DRY" = 1 ]; then
    # attention: 5 runs of the emulated flash kernels, each sized for hd 64 whatever the head dim,
    # 3.5 s each alone under ASan, over 7 s beside another CI test (an Intel Xeon, 2026-11-29); auto
    # times each kernel in every form first: 20 s a run
    case $1 in env) echo 30 ;; ops | train) echo 60 ;; bench) echo 75 ;; llama | time) echo 45 ;; attention) echo 150 ;; *) echo 30 ;; esac
  else
    case $1 in env) echo 40 ;; ops) echo 90 ;; train) echo 180 ;; bench) echo 150 ;; attention) echo 120 ;; trace) echo 100 ;; eager | llama | time) echo 120 ;;
      memcheck | racecheck) echo 100 ;; profile) echo 120 ;; compile) echo 240 ;; *) echo 60 ;; esac
  fi
}

if [ "${1:-}" = --step ]; then # re-entered: run one step's body
  STEP=$2
  for inj in ${LEASE_INJECT:-}; do
    [ "${inj%%=*}" = "$STEP" ] || continue
    case ${inj#*=} in
      fail) echo "injected failure"; result "injected failure (LEASE_INJECT)"; exit 3 ;;
      hang) echo "injected hang"; result "injected hang (LEASE_INJECT)"; exec sleep 100000 ;;
    esac
  done
  "step_$STEP"
  exit $?
fi

bundle=gpu_bundle/shardlab-gpu.tar.gz only="" budget="" out=${OUT:-} DRY=${LEASE_DRYRUN:-0}
while [ $# -gt 0 ]; do
  case $1 in
    --bundle) bundle=$2; shift 2 ;;
    --only) only=$(echo "$2" | tr ',' ' '); shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --dry-run) DRY=1; shift ;;
    *) echo "gpu_lease: unknown argument $1 (see the usage at the top of the script)" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$self")/.."
bundle=$(realpath "$bundle")
out=$(realpath -m "${out:-lease-out}")
budget=${budget:-$([ "$DRY" = 1 ] && echo 180 || echo 420)}
start=$(date +%s)
deadline=$((start + budget))
for s in $only; do case " $ALL_STEPS " in *" $s "*) ;; *) echo "gpu_lease: no step '$s' (steps: $ALL_STEPS)" >&2; exit 2 ;; esac; done

# Unpack onto local disk (the repository copy may be slow or read-only), fresh each time.
work=${LEASE_WORK:-/tmp/shardlab-lease}
rm -rf "$work" && mkdir -p "$work/logs" "$out" || exit 1
tar -C "$work" -xzf "$bundle" || { echo "gpu_lease: cannot unpack $bundle" >&2; exit 1; }
B=$work/shardlab-gpu LOGS=$work/logs
. "$B/env.sh"
# The libraries the machine provides (MANIFEST.md): the toolkit's cuBLAS, the venv's NCCL. Find
# the folder of each that the loader does not find (and of cuBLAS, always: dlopen's search is not
# ldd's to check), and say where it came from.
lib_dir() {
  local d
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-*/lib \
    /opt/torch/.venv/lib/python3*/site-packages/nvidia/*/lib; do
    [ -e "$d/$1" ] && { echo "$d"; return; }
  done
  find /opt /usr/local -name "$1" -printf '%h\n' -quit 2>/dev/null
}
dlopened=$(sed -n 's/^- opened at run time, from the GPU machine: //p' "$B/MANIFEST.md")
for lib in $(ldd "$B/bin/shardlab" | awk '/not found/ {print $1}' | sort -u) $dlopened; do
  dir=$(lib_dir "$lib")
  [ -n "$dir" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$dir && echo "gpu_lease: $lib from $dir"
done
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
export B LOGS DRY GPU_NAME LEASE_INJECT="${LEASE_INJECT:-}" LEASE_LIMITS="${LEASE_LIMITS:-}"
export PYTHONUNBUFFERED=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
: > "$LOGS/steps.tsv"

write_summary() {
  python3 - "$LOGS" "$out" "$DRY" "$(date +%s)" "$start" "$budget" <<'PY'
import json, os, sys
logs, out, dry, now, start, budget = sys.argv[1], sys.argv[2], sys.argv[3] == "1", *map(int, sys.argv[4:])
rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(logs, "steps.tsv")) if l.strip()]
manifest = open(os.path.join(os.environ["B"], "MANIFEST.md")).read().splitlines()
build = next((l[2:] for l in manifest if l.startswith("- build:")), "?")
lines = ["# shardlab GPU lease" + (" (DRY RUN: emulator build, tiny model)" if dry else ""), "",
         f"{build}; {now - start} s of a {budget} s budget", "",
         "| step | status | s | limit | result |", "|---|---|---|---|---|"]
for name, status, secs, limit, res in rows:
    lines.append(f"| {name} | {status} | {secs} | {limit} | {res.replace('|', '/')} |")
ops = os.path.join(logs, "trace_ops.md")
if os.path.exists(ops):
    lines += ["", "## Per-op time of the traced steps (rank 0)", ""] + open(ops).read().splitlines()[:22]
text = "\n".join(lines) + "\n"
open(os.path.join(out, "summary.md"), "w").write(text)
res = {"dry_run": dry, "build": build, "seconds": now - start,
       "steps": [dict(zip(("step", "status", "seconds", "limit", "result"), r)) for r in rows]}
for f in sorted(os.listdir(logs)):
    if f.endswith(".json") and f.startswith(("bench_", "attention_", "eager_", "compile_")):
        try:
            res[f[:-5]] = json.load(open(os.path.join(logs, f)))
        except ValueError:
            pass
json.dump(res, open(os.path.join(out, "results.json"), "w"), indent=1)
PY
}

run_step() {
  local name=$1 limit left t0 rc status res
  limit=$(limit_of "$name")
  left=$((deadline - $(date +%s)))
  if [ "$left" -lt 15 ]; then
    status=SKIP res="no time left in the ${budget} s budget" t0=$(date +%s)
  else
    [ "$limit" -gt $((left - 5)) ] && limit=$((left - 5))
    t0=$(date +%s)
    STEP=$name STEP_LIMIT=$limit timeout -k 5 "$limit" "$BASH" "$self" --step "$name" > "$LOGS/$name.log" 2>&1
    rc=$?
    res=$(cat "$LOGS/$name.result" 2>/dev/null | tr '\t\n' '  ' | sed 's/[ ;]*$//')
    case $rc in
      0) status=ok ;;
      77) status=SKIP ;;
      124 | 137) status=TIMEOUT res="killed after ${limit} s; ${res}" ;;
      *) status="FAIL ($rc)" ;;
    esac
  fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$status" $(($(date +%s) - t0)) "$limit" "$res" >> "$LOGS/steps.tsv"
  printf 'gpu_lease: [%4ds] %-9s %-9s %s\n' $(($(date +%s) - start)) "$name" "$status" "$res"
  write_summary
}

for s in ${only:-$ALL_STEPS}; do run_step "$s"; done
tar -C "$work" -czf "$out/lease-logs.tar.gz" logs
echo "gpu_lease: \$OUT: $(cd "$out" && ls | tr '\n' ' ')"
echo
cat "$out/summary.md"
grep -qv -P '\t(ok|SKIP)\t' "$LOGS/steps.tsv" && exit 1
exit 0
