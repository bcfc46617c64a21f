#!/usr/bin/env python3
"""The numerics of `shardlab train`, pinned: for a few fixed configurations the SHA-256 of the
final fp32 master weights must equal the value recorded here. Refactors must leave every bit of
training unchanged; a commit that changes numerics on purpose updates these values and says why.
CTest runs it with SHARDLAB_GEMM=openblas OPENBLAS_CORETYPE=Haswell: one GEMM kernel on every
x86-64 CPU with AVX2, so the values hold across machines. (Last changed in issue 23: OpenBLAS's
own threading gave other bits at other thread counts, so shardlab now threads each product itself
in fixed blocks of 64 columns (kernels/cpu/gemm.cpp) — every fp32 row and the 1-rank rows changed,
the 16-bit multi-rank rows kept theirs (their rounding absorbed the change); and the
--reproducible rows were added, one hash at N = 1, 2 and 4. Before: issue 24 made flash the
default attention; issue 12 tiled attention into GEMMs, cross-entropy through vexp, the squared
norm as eight interleaved sums.)
Run with --print to show the current values instead of checking them.
Usage: pinned_hashes_check.py SHARDLAB MPIRUN [MPIRUN ARGS...] [--print]"""
import json
import os
import subprocess
import sys
import tempfile

args = [a for a in sys.argv[1:] if a != "--print"]
PRINT = "--print" in sys.argv
SHARDLAB, MPIRUN = args[0], args[1:]
MODEL = ["--layers", "2", "--hidden", "64", "--heads", "4", "--seq", "32", "--vocab", "256",
         "--micro-batch", "2", "--steps", "3", "--lr", "3e-3", "--warmup", "1", "--quiet"]

# name, ranks, flags, sha256 of the final fp32 master weights
PINNED = [
    ("fp32-n1-zero0", 1, ["--precision", "fp32", "--zero", "0"],
     "eb91557ebf21dfc6688e953533e41f4898d0384a3529e944c01f639dd73c1dae"),
    ("bf16-n1-zero0", 1, ["--precision", "bf16", "--zero", "0"],
     "21c681a56f1c408deb0da47053dadc5f2e12f26ffd1f11dce0f485893d11ea54"),
    ("fp16-n1-zero0", 1, ["--precision", "fp16", "--zero", "0"],
     "a21862149e52324a156955d30a590db0a60477d8d00e6a485115fbc3a770d6db"),
    ("bf16-n1-zero0-offload", 1, ["--precision", "bf16", "--zero", "0", "--offload"],
     "21c681a56f1c408deb0da47053dadc5f2e12f26ffd1f11dce0f485893d11ea54"),
    ("fp32-n4-zero0", 4, ["--precision", "fp32", "--zero", "0"],
     "eb9f57ef61b96b48899ee53416a5bae31c4c544f00785a8563e07e14e2e52463"),
    ("fp32-n4-zero3", 4, ["--precision", "fp32", "--zero", "3"],
     "eb9f57ef61b96b48899ee53416a5bae31c4c544f00785a8563e07e14e2e52463"),
    ("bf16-n4-zero0", 4, ["--precision", "bf16", "--zero", "0"],
     "359fd780887971e5eab0d0d2a047b07dda204d04bc2e76ca1c135cca323b0629"),
    ("bf16-n4-zero3", 4, ["--precision", "bf16", "--zero", "3"],
     "359fd780887971e5eab0d0d2a047b07dda204d04bc2e76ca1c135cca323b0629"),
    ("bf16-n4-zero3-offload", 4, ["--precision", "bf16", "--zero", "3", "--offload"],
     "359fd780887971e5eab0d0d2a047b07dda204d04bc2e76ca1c135cca323b0629"),
    ("bf16-n4-zero3-prefetch1-ckall", 4, ["--precision", "bf16", "--zero", "3", "--prefetch", "1", "--checkpoint", "all"],
     "359fd780887971e5eab0d0d2a047b07dda204d04bc2e76ca1c135cca323b0629"),
    ("bf16-n3-zero2-accum2", 3, ["--precision", "bf16", "--zero", "2", "--grad-accum", "2"],
     "247775bb7ac786e310ebc1cfe6a6f80282c99b2c7f528ab93c9ceb19ea1de5ca"),
    ("fp16-n2-zero1-offload", 2, ["--precision", "fp16", "--zero", "1", "--offload"],
     "e6dbb49c7f09217be00dd672b063dee2586b1ad51009459cf3fd930f772d3274"),
    ("fp32-n1-zero0-materialize", 1, ["--precision", "fp32", "--zero", "0", "--attention", "materialize"],
     "b050c8d45e5e4f6081491bd95a9aaa0da1f86b6af0de84309e8f96ddb36f8430"),
    # --reproducible: global batch 4 (micro-batch x grad-accum x N) at any N, the same bits
    ("bf16-n1-reproducible", 1, ["--precision", "bf16", "--reproducible", "--grad-accum", "2"],
     "dea0d318de6aacd4368dc184731add461d213b93058e3e167d5b28e4e8b3df56"),
    ("bf16-n2-zero3-reproducible", 2, ["--precision", "bf16", "--zero", "3", "--reproducible"],
     "dea0d318de6aacd4368dc184731add461d213b93058e3e167d5b28e4e8b3df56"),
    ("bf16-n4-zero1-reproducible", 4, ["--precision", "bf16", "--zero", "1", "--reproducible",
                                       "--micro-batch", "1"], "dea0d318de6aacd4368dc184731add461d213b93058e3e167d5b28e4e8b3df56"),
    ("bf16-n4-zero3-materialize", 4, ["--precision", "bf16", "--zero", "3", "--attention", "materialize"],
     "65e8b73bcde80f1c00015e0a32dd8e1c914dc965cc421411937d3cb5159e330b"),
]

bad = 0
with tempfile.TemporaryDirectory() as tmp:
    for name, k, flags, want in PINNED:
        out = os.path.join(tmp, name)
        cmd = MPIRUN + ["-np", str(k), SHARDLAB, "train", *MODEL, *flags, "--out", out]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            sys.exit(f"FAILED: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
        got = json.load(open(os.path.join(out, "report.json")))["final_params_sha256"]
        if PRINT:
            print(f'    ("{name}", {k}, {flags!r},\n     "{got}"),')
            continue
        ok = got == want
        bad += not ok
        print(f"{'ok' if ok else 'FAIL'}: {name} on {k} rank(s): {got}" + ("" if ok else f" (pinned {want})"))
sys.exit(1 if bad else 0)
