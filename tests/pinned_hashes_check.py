#!/usr/bin/env python3
"""The numerics of `shardlab train`, pinned: for a few fixed configurations the SHA-256 of the
final fp32 master weights must equal the value recorded here. Refactors must leave every bit of
training unchanged; a commit that changes numerics on purpose updates these values and says why.
CTest runs it with SHARDLAB_GEMM=openblas OPENBLAS_CORETYPE=Haswell: one GEMM kernel on every
x86-64 CPU with AVX2, so the values hold across machines. (Last changed in issue 24: the default
attention became flash, so every default row changed; the materialize rows keep issue 12's values,
proving the reference path unchanged. Issue 12: attention in tiles of GEMMs, cross-entropy through
vexp, the squared norm as eight interleaved sums.)
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
     "53cdef01f7289ff18aff243b90979890d7b963113e167d70c11e159b3b063d45"),
    ("bf16-n1-zero0", 1, ["--precision", "bf16", "--zero", "0"],
     "f600ed83948738d88356aa2b0f9c4fc90873c1ba71848333f48a90c702ca7d9d"),
    ("fp16-n1-zero0", 1, ["--precision", "fp16", "--zero", "0"],
     "1703d673cb436e0ca6be770cdb86f7e02b4e76ba60ea639498bf1bb906def97e"),
    ("bf16-n1-zero0-offload", 1, ["--precision", "bf16", "--zero", "0", "--offload"],
     "f600ed83948738d88356aa2b0f9c4fc90873c1ba71848333f48a90c702ca7d9d"),
    ("fp32-n4-zero0", 4, ["--precision", "fp32", "--zero", "0"],
     "44f2ab28f9d3b1b73ade97708ac602d4b294d0ec5c22e35d5f26459ef3e30f87"),
    ("fp32-n4-zero3", 4, ["--precision", "fp32", "--zero", "3"],
     "44f2ab28f9d3b1b73ade97708ac602d4b294d0ec5c22e35d5f26459ef3e30f87"),
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
     "2a25446ab237f48a145c75680b6e06b34b2ffa196279343225fba3fb574be5a2"),
    ("fp32-n1-zero0-materialize", 1, ["--precision", "fp32", "--zero", "0", "--attention", "materialize"],
     "c284dfa706235d28d28f821c04c2af5c258aa388b62eaadf2399f44ddc10a7be"),
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
