#!/usr/bin/env python3
"""A Llama (GQA 4:2, untied head) trained with `--device cuda` on 2 ranks — on the SIMT emulator in
CI (each rank its own emulated GPU, NCCL's stand-in between them), unchanged on a real GPU:
  1. ZeRO 0 and ZeRO 3 + offload, bf16: bitwise-identical losses and final weights;
  2. on every rank, measured bytes equal the prediction per memory category and per collective;
  3. against `--device cpu` on the same seed and data: bf16 losses within 1e-2 relative (the
     GEMMs accumulate in another order; RMSNorm, RoPE, SwiGLU and attention are held to the CPU's
     kernels by tests/test_cuda_llama_ops.cpp and test_cuda_ops).
Usage: llama_cuda_check.py SHARDLAB MPIRUN [MPIRUN ARGS...]"""
import json
import os
import subprocess
import sys
import tempfile

from report_expect import measured_equals_predicted

SHARDLAB = sys.argv[1]
MPIRUN = sys.argv[2:]
MODEL = ["--arch", "llama", "--preset", "tiny-llama", "--layers", "2", "--hidden", "64",
         "--heads", "4", "--kv-heads", "2", "--ffn", "96", "--seq", "32", "--vocab", "256"]
BASE = ["--micro-batch", "2", "--steps", "3", "--precision", "bf16", "--lr", "3e-3",
        "--val-every", "0", "--quiet"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(args, out):
    cmd = MPIRUN + ["-np", "2", SHARDLAB, "train", *MODEL, *BASE, "--out", out, *args]
    env = dict(os.environ, SHARDLAB_EMU_GPUS="2")  # under the emulator: each rank its own GPU
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    if p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return json.load(open(os.path.join(out, "report.json")))


with tempfile.TemporaryDirectory() as tmp:
    reps = {}
    for name, args in [("cuda-zero0", ["--device", "cuda", "--zero", "0"]),
                       ("cuda-zero3-offload", ["--device", "cuda", "--zero", "3", "--offload"]),
                       ("cpu-zero3", ["--device", "cpu", "--zero", "3"])]:
        reps[name] = rep = run(args, os.path.join(tmp, name))
        for r in rep["ranks"]:
            measured_equals_predicted(check, name, r)
        print(f"ok: {name}: losses {[round(s['loss'], 5) for s in rep['steps']]}")
    sig = lambda r: ([s["loss"] for s in r["steps"]], r["final_params_sha256"])  # noqa: E731
    check(sig(reps["cuda-zero0"]) == sig(reps["cuda-zero3-offload"]),
          "cuda: ZeRO-0 and ZeRO-3 + offload differ")
    for c, g in zip(sig(reps["cpu-zero3"])[0], sig(reps["cuda-zero0"])[0]):
        check(abs(c - g) <= 1e-2 * abs(c), f"cuda loss {g} vs cpu {c}: beyond 1e-2 relative")

if failures:
    sys.exit(f"{len(failures)} failures")
print("llama on cuda (2 ranks): ok")
