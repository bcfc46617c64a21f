#!/usr/bin/env python3
"""The numerics of `shardlab train`, pinned: for a few fixed configurations the SHA-256 of the
final fp32 master weights must equal the value recorded here. Refactors must leave every bit of
training unchanged; a commit that changes numerics on purpose updates these values and says why.
CTest runs it with SHARDLAB_GEMM=openblas OPENBLAS_CORETYPE=Haswell: one GEMM kernel on every
x86-64 CPU with AVX2, so the values hold across machines. (Last changed: attention computed in
tiles with GEMMs, issue 12.)
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
     "c86aaba669f60c3d8fe56c6226a21e1887ee8284a4b6f1344fb5e2b5e21f373c"),
    ("bf16-n1-zero0", 1, ["--precision", "bf16", "--zero", "0"],
     "089042389dbdcacdc5b41db46849e6e350b5bb5094e0c3118eac2ecd34635efa"),
    ("fp16-n1-zero0", 1, ["--precision", "fp16", "--zero", "0"],
     "5bb032cf11026effb0e12ff7222fd7a802af2e33260d13bfd7c6668e2842c754"),
    ("bf16-n1-zero0-offload", 1, ["--precision", "bf16", "--zero", "0", "--offload"],
     "089042389dbdcacdc5b41db46849e6e350b5bb5094e0c3118eac2ecd34635efa"),
    ("fp32-n4-zero0", 4, ["--precision", "fp32", "--zero", "0"],
     "c6e77bf2678a6c788e12bb15c7e7acc3eff1b94350cbd7955fe1ccef4c6ee9f0"),
    ("fp32-n4-zero3", 4, ["--precision", "fp32", "--zero", "3"],
     "c6e77bf2678a6c788e12bb15c7e7acc3eff1b94350cbd7955fe1ccef4c6ee9f0"),
    ("bf16-n4-zero0", 4, ["--precision", "bf16", "--zero", "0"],
     "73be9ae45d1311f9ed3601c01da4b6420c4da17172131c155d5d221c58b1c096"),
    ("bf16-n4-zero3", 4, ["--precision", "bf16", "--zero", "3"],
     "73be9ae45d1311f9ed3601c01da4b6420c4da17172131c155d5d221c58b1c096"),
    ("bf16-n4-zero3-offload", 4, ["--precision", "bf16", "--zero", "3", "--offload"],
     "73be9ae45d1311f9ed3601c01da4b6420c4da17172131c155d5d221c58b1c096"),
    ("bf16-n4-zero3-prefetch1-ckall", 4, ["--precision", "bf16", "--zero", "3", "--prefetch", "1", "--checkpoint", "all"],
     "73be9ae45d1311f9ed3601c01da4b6420c4da17172131c155d5d221c58b1c096"),
    ("bf16-n3-zero2-accum2", 3, ["--precision", "bf16", "--zero", "2", "--grad-accum", "2"],
     "d1825be4a8cc8082dbc3a9a00d11ce19e35832517e30bb553be3d75a07183927"),
    ("fp16-n2-zero1-offload", 2, ["--precision", "fp16", "--zero", "1", "--offload"],
     "25512de39046e864cecc0b78b388d061d5a675094221f838369340d4cfb69929"),
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
