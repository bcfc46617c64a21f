#!/usr/bin/env python3
"""The numerics of `shardlab train`, pinned: for a few fixed configurations the SHA-256 of the
final fp32 master weights must equal the value recorded here. Refactors must leave every bit of
training unchanged; a commit that changes numerics on purpose updates these values and says why.
CTest runs it with SHARDLAB_GEMM=openblas OPENBLAS_CORETYPE=Haswell: one GEMM kernel on every
x86-64 CPU with AVX2, so the values hold across machines. (Last changed in issue 12: attention in
tiles of GEMMs, cross-entropy through vexp, the squared norm as eight interleaved sums.)
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
     "c284dfa706235d28d28f821c04c2af5c258aa388b62eaadf2399f44ddc10a7be"),
    ("bf16-n1-zero0", 1, ["--precision", "bf16", "--zero", "0"],
     "dda82ab8b558a021eccf0ef70df9c02e71a8ffebce5b74eb8a1cd19a4b83236d"),
    ("fp16-n1-zero0", 1, ["--precision", "fp16", "--zero", "0"],
     "441c40ebc5e6b484abfeb221644c48b641e8a952319161d8a9855d6ee73c5ceb"),
    ("bf16-n1-zero0-offload", 1, ["--precision", "bf16", "--zero", "0", "--offload"],
     "dda82ab8b558a021eccf0ef70df9c02e71a8ffebce5b74eb8a1cd19a4b83236d"),
    ("fp32-n4-zero0", 4, ["--precision", "fp32", "--zero", "0"],
     "6bb5d8ea3420eef0d3a13c261bf86963555206c495e8682121cc3f3e6e0af255"),
    ("fp32-n4-zero3", 4, ["--precision", "fp32", "--zero", "3"],
     "6bb5d8ea3420eef0d3a13c261bf86963555206c495e8682121cc3f3e6e0af255"),
    ("bf16-n4-zero0", 4, ["--precision", "bf16", "--zero", "0"],
     "65e8b73bcde80f1c00015e0a32dd8e1c914dc965cc421411937d3cb5159e330b"),
    ("bf16-n4-zero3", 4, ["--precision", "bf16", "--zero", "3"],
     "65e8b73bcde80f1c00015e0a32dd8e1c914dc965cc421411937d3cb5159e330b"),
    ("bf16-n4-zero3-offload", 4, ["--precision", "bf16", "--zero", "3", "--offload"],
     "65e8b73bcde80f1c00015e0a32dd8e1c914dc965cc421411937d3cb5159e330b"),
    ("bf16-n4-zero3-prefetch1-ckall", 4, ["--precision", "bf16", "--zero", "3", "--prefetch", "1", "--checkpoint", "all"],
     "65e8b73bcde80f1c00015e0a32dd8e1c914dc965cc421411937d3cb5159e330b"),
    ("bf16-n3-zero2-accum2", 3, ["--precision", "bf16", "--zero", "2", "--grad-accum", "2"],
     "b2214e3315070245a2e19199ab9c881271afea4c19573367f400b83c754e47f0"),
    ("fp16-n2-zero1-offload", 2, ["--precision", "fp16", "--zero", "1", "--offload"],
     "bf90cf62f545b06e94b70f17d1fbf857daee26c4074f068683a57f0d9452274e"),
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
