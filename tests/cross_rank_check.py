#!/usr/bin/env python3
"""The same global batch on 1, 2 and 4 ranks (micro-batch 4, 2, 1): each step's loss agrees
within 1e-4 relative in fp32 — not bitwise, because averaging over ranks and over the batch
round in different orders — and within 2e-2 in bf16.
Usage: cross_rank_check.py SHARDLAB MPIRUN [MPIRUN ARGS...]"""
import json
import os
import subprocess
import sys
import tempfile

SHARDLAB, MPIRUN = sys.argv[1], sys.argv[2:]
MODEL = ["--layers", "2", "--hidden", "64", "--heads", "4", "--seq", "32", "--steps", "5", "--lr", "3e-3", "--quiet"]
bad = 0
with tempfile.TemporaryDirectory() as tmp:
    for precision, tol in (("fp32", 1e-4), ("bf16", 2e-2)):
        losses = {}
        for k, b in ((1, 4), (2, 2), (4, 1)):
            out = os.path.join(tmp, f"{precision}{k}")
            cmd = MPIRUN + ["-np", str(k), SHARDLAB, "train", *MODEL, "--precision", precision,
                            "--micro-batch", str(b), "--zero", "3" if k > 1 else "0", "--out", out]
            subprocess.run(cmd, check=True, capture_output=True, timeout=300)
            losses[k] = [s["loss"] for s in json.load(open(os.path.join(out, "report.json")))["steps"]]
        for k in (2, 4):
            worst = max(abs(a - b) / abs(b) for a, b in zip(losses[k], losses[1]))
            ok = worst < tol
            bad += not ok
            print(f"{'ok' if ok else 'FAIL'}: {precision} K={k} vs K=1: worst relative loss difference {worst:.2e} (tolerance {tol})")
sys.exit(1 if bad else 0)
