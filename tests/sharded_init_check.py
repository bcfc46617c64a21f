#!/usr/bin/env python3
"""Sharded, rank-count-independent initialisation (issue 11):

- The initial parameters are the same at N = 1, 2 and 3 (ZeRO-3, each rank drawing only its own
  shard): one step at lr 0 leaves the fp32 master weights as they began (AdamW moves them by
  lr x ..., weight decay scales them by 1 - lr x wd = 1, both exact), and their SHA-256 equals
  that of the data section of `shardlab init` with the same seed — every tensor bit for bit; the
  same file given to `train --init` at N = 2 and 3 (each rank reading only its shard's byte
  ranges) starts from exactly those weights.
- GPT-2 124M, ZeRO-3 on 2 ranks: each rank's resident-set peak through initialisation is below
  its peak over the training steps (before, every rank built the whole fp32 model first: +0.5 GB,
  above the steady state).
Usage: sharded_init_check.py SHARDLAB MPIRUN [MPIRUN ARGS...]"""
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile

SHARDLAB, MPIRUN = sys.argv[1], sys.argv[2:]
SHAPE = ["--layers", "2", "--hidden", "64", "--heads", "4", "--seq", "32"]
bad = 0


def say(ok, text):
    global bad
    bad += not ok
    print(("ok: " if ok else "FAIL: ") + text)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")


with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "init.safetensors")
    run([SHARDLAB, "init", *SHAPE, "--seed", "5", "--out", path])
    b = open(path, "rb").read()
    n = struct.unpack_from("<Q", b, 0)[0]
    want = hashlib.sha256(b[8 + n:]).hexdigest()  # tensors in unit order, fp32
    for ranks in (1, 2, 3):
        out = os.path.join(tmp, f"n{ranks}")
        run(MPIRUN + ["-np", str(ranks), SHARDLAB, "train", *SHAPE, "--seed", "5", "--steps", "1",
                      "--lr", "0", "--zero", "3", "--precision", "fp32", "--threads", "1",
                      "--quiet", "--out", out])
        got = json.load(open(os.path.join(out, "report.json")))["final_params_sha256"]
        say(got == want, f"N={ranks}: initial parameters' sha256 {got[:16]} = shardlab init's "
                         f"{want[:16]}")
    for ranks in (2, 3):  # --init: each rank reads only its shard's byte ranges of the file
        out = os.path.join(tmp, f"init{ranks}")
        run(MPIRUN + ["-np", str(ranks), SHARDLAB, "train", "--init", path, "--steps", "1",
                      "--lr", "0", "--zero", "3", "--precision", "fp32", "--threads", "1",
                      "--quiet", "--out", out])
        got = json.load(open(os.path.join(out, "report.json")))["final_params_sha256"]
        say(got == want, f"N={ranks}, --init read in shards: sha256 {got[:16]} = the file's")

    out = os.path.join(tmp, "gpt2")
    run(MPIRUN + ["-np", "2", SHARDLAB, "train", "--preset", "gpt2", "--seq", "64",
                  "--micro-batch", "1", "--steps", "2", "--zero", "3", "--threads", "1", "--quiet",
                  "--out", out])
    for r in json.load(open(os.path.join(out, "report.json")))["ranks"]:
        init, train = r["resident"]["init_peak_bytes"], r["resident"]["training_peak_bytes"]
        say(0 < init <= train, f"GPT-2 124M ZeRO-3 rank {r['rank']}: resident peak through init "
                               f"{init / 1e6:.0f} MB <= over the steps {train / 1e6:.0f} MB")
sys.exit(1 if bad else 0)
