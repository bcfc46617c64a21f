#!/usr/bin/env python3
"""A run that diverges stops and keeps a checkpoint it can be resumed from (docs/RELIABILITY.md).
A step is bad when its loss or gradient norm is not finite (steps.jsonl writes them as null).
  1. `--lr 1e30 --save-every 1` from scratch on 2 ranks: step 1's update makes every later step
     bad. The run stops after --max-bad-steps (3) bad steps, exit 3, the steps named; the only
     checkpoint (step 1's) had a bad next step, so it is set aside in checkpoint.diverged, none is
     left in checkpoint/, and the message says so. report.json is written, --save-weights is not.
  2. `eval` of those weights (exported from checkpoint.diverged): the loss is NaN, so exit 1 and a
     message that they diverged.
  3. `--lr 1e6`, stopped after step 1 and resumed in place: step 2 is finite but its update makes
     steps 3-5 bad. Exit 3; step 2's checkpoint (its next step bad) is set aside and step 1's (its
     next step finite), kept beside it across the resume, is back in checkpoint/; a resume from it
     starts at step 1.
  4. --max-bad-steps 0 never stops: the run of 1 goes to its last step (exit 0).
Usage: divergence_check.py SHARDLAB MPIRUN [MPIRUN ARGS...]"""
import json
import math
import os
import subprocess
import sys
import tempfile

SHARDLAB = sys.argv[1]
MPIRUN = sys.argv[2:]
SMALL = ["--layers", "1", "--hidden", "32", "--heads", "2", "--seq", "16", "--micro-batch", "2",
         "--threads", "1", "--quiet"]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def train(*args, ranks=2):
    cmd = MPIRUN + ["-np", str(ranks), SHARDLAB, "train", *SMALL, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def finite(x):
    return x is not None and math.isfinite(x)


def bad_steps(out):
    """The steps (1-based) whose loss or gradient norm was not finite."""
    rows = [json.loads(line) for line in open(os.path.join(out, "steps.jsonl"))]
    return [r["step"] for r in rows if not (finite(r["loss"]) and finite(r["grad_norm"]))], len(rows)


def iteration(cdir):
    return json.load(open(os.path.join(cdir, "meta.json")))["iteration"]


with tempfile.TemporaryDirectory() as tmp:
    # 1. Bad from step 2 on: no checkpoint can be trusted.
    a = os.path.join(tmp, "a")
    p = train("--lr", "1e30", "--warmup", "0", "--steps", "20", "--save-every", "1",
              "--max-bad-steps", "3", "--out", a, "--save-weights", os.path.join(tmp, "a.safetensors"))
    text = p.stdout + p.stderr
    check(p.returncode == 3, f"1: exit {p.returncode} (3 expected)")
    check(bad_steps(a) == ([2, 3, 4], 4), f"1: bad steps and steps run {bad_steps(a)}: 2-4 of 4")
    check("the run diverged: steps 2-4 (3 in a row) had a non-finite loss or gradient norm" in text,
          "1: the message names the bad steps")
    check("no checkpoint had a finite next loss" in text, "1: the message says no checkpoint can be trusted")
    check(not os.path.exists(os.path.join(a, "checkpoint")), "1: no checkpoint/ left holding a diverged state")
    check(iteration(os.path.join(a, "checkpoint.diverged")) == 1, "1: step 1's checkpoint set aside in checkpoint.diverged")
    check(os.path.exists(os.path.join(a, "report.json")), "1: report.json written")
    check(not os.path.exists(os.path.join(tmp, "a.safetensors")), "1: no --save-weights file of diverged weights")

    # 2. eval of diverged weights fails.
    w = os.path.join(tmp, "diverged.safetensors")
    p = subprocess.run([SHARDLAB, "checkpoint", "export", os.path.join(a, "checkpoint.diverged"), "--out", w],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"2: export of checkpoint.diverged (exit {p.returncode}) {p.stderr.strip()[:200]}")
    p = subprocess.run([SHARDLAB, "eval", "--weights", w, "--data", "/usr/share/common-licenses/GPL-3",
                        "--seq", "16", "--batch", "4", "--threads", "1"], capture_output=True, text=True, timeout=60)
    check(p.returncode == 1 and "these weights have diverged" in p.stderr,
          f"2: eval of diverged weights: exit {p.returncode}, {(p.stdout + p.stderr).strip()[:200]}")

    # 3. Diverges after a resume in place; the trusted checkpoint survives across it.
    b = os.path.join(tmp, "b")
    flags = ["--lr", "1e6", "--warmup", "0", "--steps", "20", "--save-every", "1", "--max-bad-steps", "3"]
    p = train(*flags, "--stop-after", "1", "--out", b)
    check(p.returncode == 0 and iteration(os.path.join(b, "checkpoint")) == 1, f"3: step 1 and its checkpoint (exit {p.returncode})")
    p = train(*flags, "--resume", b)
    text = p.stdout + p.stderr
    check(p.returncode == 3, f"3: exit {p.returncode} after the resume (3 expected)")
    check(bad_steps(b) == ([3, 4, 5], 5), f"3: bad steps and steps run {bad_steps(b)}: 3-5 of 5")
    check(iteration(os.path.join(b, "checkpoint")) == 1, "3: checkpoint/ is step 1's, the last with a finite next step")
    check(iteration(os.path.join(b, "checkpoint.diverged")) == 2, "3: step 2's checkpoint set aside")
    check("the checkpoint of step 1 (the last whose next loss was finite)" in text and "train --init W.safetensors" in text,
          "3: the message names the checkpoint kept and how to go on with another --lr")
    check(not os.path.exists(os.path.join(b, "checkpoint.prev")), "3: no checkpoint.prev left behind")
    p = train(*flags, "--stop-after", "2", "--resume", b)
    check(p.returncode == 0 and "at step 1" in p.stdout + p.stderr,
          f"3: a resume from the kept checkpoint starts at step 1 (exit {p.returncode})")

    # 4. --max-bad-steps 0: never stop.
    c = os.path.join(tmp, "c")
    p = train("--lr", "1e30", "--warmup", "0", "--steps", "8", "--max-bad-steps", "0", "--out", c)
    check(p.returncode == 0 and bad_steps(c)[1] == 8, f"4: --max-bad-steps 0 ran all 8 steps (exit {p.returncode})")

print(f"{len(failures)} failed" if failures else "PASS")
sys.exit(1 if failures else 0)
