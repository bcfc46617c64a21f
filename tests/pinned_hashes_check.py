#!/usr/bin/env python3
"""The numerics of `shardlab train`, pinned: for a few fixed configurations the SHA-256 of the
final fp32 master weights must equal the value recorded here. Refactors must leave every bit of
training unchanged; a commit that changes numerics on purpose updates these values and says why.
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
     "5a5d37e5acbd5eb41927c3af3fbfbf30f448d9e1b4959e5d530ccf9fcb5f89c1"),
    ("bf16-n1-zero0", 1, ["--precision", "bf16", "--zero", "0"],
     "089042389dbdcacdc5b41db46849e6e350b5bb5094e0c3118eac2ecd34635efa"),
    ("fp16-n1-zero0", 1, ["--precision", "fp16", "--zero", "0"],
     "2976d87498546bebf3e002bd719019689237aba6d1e36ff4fae8783b21dad201"),
    ("bf16-n1-zero0-offload", 1, ["--precision", "bf16", "--zero", "0", "--offload"],
     "089042389dbdcacdc5b41db46849e6e350b5bb5094e0c3118eac2ecd34635efa"),
    ("fp32-n4-zero0", 4, ["--precision", "fp32", "--zero", "0"],
     "4574a70de3c36925620035f05775e573c6d16684e55dc3f67238dc74a6705071"),
    ("fp32-n4-zero3", 4, ["--precision", "fp32", "--zero", "3"],
     "4574a70de3c36925620035f05775e573c6d16684e55dc3f67238dc74a6705071"),
    ("bf16-n4-zero0", 4, ["--precision", "bf16", "--zero", "0"],
     "5b01b46cbb879374b190ba8c65ebba61043094d7158f4aa2e09b3f4e0858291a"),
    ("bf16-n4-zero3", 4, ["--precision", "bf16", "--zero", "3"],
     "5b01b46cbb879374b190ba8c65ebba61043094d7158f4aa2e09b3f4e0858291a"),
    ("bf16-n4-zero3-offload", 4, ["--precision", "bf16", "--zero", "3", "--offload"],
     "5b01b46cbb879374b190ba8c65ebba61043094d7158f4aa2e09b3f4e0858291a"),
    ("bf16-n4-zero3-prefetch1-ckall", 4, ["--precision", "bf16", "--zero", "3", "--prefetch", "1", "--checkpoint", "all"],
     "5b01b46cbb879374b190ba8c65ebba61043094d7158f4aa2e09b3f4e0858291a"),
    ("bf16-n3-zero2-accum2", 3, ["--precision", "bf16", "--zero", "2", "--grad-accum", "2"],
     "0fb898ecad69a5b16a24723525d2e96fba4d48659cc8b6ce555404038b7c4321"),
    ("fp16-n2-zero1-offload", 2, ["--precision", "fp16", "--zero", "1", "--offload"],
     "60dde34015e211a107f571104396ff6ad36ed6e98d22c0260de2546da2ad2ad2"),
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
