#!/usr/bin/env python3
"""The same global batch on 1, 2 and 4 ranks (micro-batch 4, 2, 1): each step's loss agrees
within 1e-4 relative in fp32 — not bitwise, because averaging over ranks and over the batch
round in different orders — and within 2e-2 in bf16.
Validation, with the weights held (--lr 0): the same global batch split as 1 x (micro-batch 2 x
grad-accum 2), 2 x 2 and 2 x (1 x 2) validates on the same windows (within 1e-5 in fp32); and with
--val-batches asking for far more windows than the split holds, each window counts once: the
validation loss equals `shardlab eval` over the validation tokens alone.
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

    # Validation. 20,000 bytes: the last 2,000 (10%) are the validation split, 60 windows of 33.
    data = os.path.join(tmp, "data.txt")
    text = open("/usr/share/common-licenses/GPL-3", "rb").read()[:20000]
    open(data, "wb").write(text)
    val_text = os.path.join(tmp, "val.txt")
    open(val_text, "wb").write(text[-2000:])
    weights = os.path.join(tmp, "w.safetensors")
    subprocess.run([SHARDLAB, "init", *MODEL[:8], "--out", weights], check=True, capture_output=True)

    def val_loss(k, b, a, batches):
        out = os.path.join(tmp, f"val{k}{b}{a}{batches}")
        cmd = MPIRUN + ["-np", str(k), SHARDLAB, "train", "--init", weights, "--data", data,
                        "--steps", "1", "--lr", "0", "--val-every", "1", "--val-batches", str(batches),
                        "--micro-batch", str(b), "--grad-accum", str(a), "--quiet", "--out", out]
        subprocess.run(cmd, check=True, capture_output=True, timeout=300)
        return json.load(open(os.path.join(out, "report.json")))["steps"][0]["val_loss"]

    split = {(k, b, a): val_loss(k, b, a, 2) for k, b, a in ((1, 2, 2), (2, 2, 1), (2, 1, 2))}
    worst = max(abs(v - split[(1, 2, 2)]) / split[(1, 2, 2)] for v in split.values())
    ok = worst < 1e-5
    bad += not ok
    print(f"{'ok' if ok else 'FAIL'}: validation on the same windows for every split of a global batch of 4: "
          f"{split} (worst relative difference {worst:.1e})")
    every = val_loss(2, 1, 1, 1000)  # asks for 2,000 windows of the 60
    ev = subprocess.run([SHARDLAB, "eval", "--weights", weights, "--data", val_text, "--json"],
                        check=True, capture_output=True, text=True, timeout=300)
    ev = json.loads(ev.stdout.strip().splitlines()[-1])
    ok = ev["windows"] == 60 and abs(every - ev["loss"]) / ev["loss"] < 1e-5
    bad += not ok
    print(f"{'ok' if ok else 'FAIL'}: --val-batches 1000 on 60 windows: {every:.7f}, each window once as eval "
          f"gives {ev['loss']:.7f} over its {ev['windows']} windows")
sys.exit(1 if bad else 0)
