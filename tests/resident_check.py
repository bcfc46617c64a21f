#!/usr/bin/env python3
"""Every byte of a rank explained (issue 22, item 5), under `mpirun -np K`: for a model at the
ZeRO stages and optimizer offload settings given (default: stages 0-3, offload off and on), every
rank's max RSS in each phase (init, training, end) is within 5% of the report's
explained_peak_bytes for that phase (the runtime baseline measured before the model is built +
the code paged in since + the caching allocators' reserve and the declared host staging), and the
report's parts add up (explained = baseline + code + held, reserve <= held <= reserve + staging,
reserve >= tracked bytes, untracked = max RSS - explained, the run's peak is its largest phase's).
Models: `test` (the tiny test model, report_expect.TINY_MODEL), `tiny` (--preset tiny at
micro-batch 4 x 128 tokens: ~1.7 s a run where its default 8 x 256 takes ~5 s; CI's time), `gpt2`
(--preset gpt2, bf16, micro-batch 1 x 64 tokens: ~10 s a run, so CTest runs a subset).
bench/resident_matrix.py runs the full matrices, tiny at its default shape (docs/BENCHMARKS.md "Every byte of a rank explained").

Why 5% and not less: RSS counts 4 KiB pages, and some of what it holds is nobody's to track —
glibc's per-allocation overhead, thread stacks, MPI's shared-memory windows and code first run
after a phase's peak. Measured (2-vCPU Zen 3, docs/MEMORY.md section 11, docs/BENCHMARKS.md "Every byte of a rank explained")
that is 1-4 MB a rank: the tiny preset at 4 x 128 tokens reads -0.7% to +3.0% (the most at the
end phase of ZeRO 1-3, where each unit is gathered in fp32; it read +5.2% at ZeRO-3 N=2 until the
consolidation gave each unit's freed host copy back), GPT-2 124M within 2.5%. On an Intel Xeon
with AMX (2026-11-29) it read up to +5.1% until the code oneDNN generates at run time (1.3 MB of
AMX kernels) was counted as code; since, up to +4.1% (2.6-3.9 MB a rank) under `ctest -j3`. 5% leaves ~1% for
another libc or MPI build on the smallest run while still failing if a tensor-sized buffer (a
gathered unit or a step's activations is several % of the tiny run) went untracked, staging were
declared that is not made (the -5% to -16% this test was written against), or the baseline were
taken after the model was built.
Checkpoints too (the default adds 0s and 3or): a save every step holds the owned state, the
file's slices and their encoding at once (training phase), a resume the owned state and one rank
file read and decoded (init phase) — each declared as host staging, once +49% to +103% untracked.
Usage: resident_check.py [--model test|tiny|gpt2] [--configs 0,0o,3o,...] K SHARDLAB MPIRUN
       [MPIRUN ARGS...]   (a config: the stage, "o" for --offload, "s" for --save-every 1, "r"
       for a run stopped after a step and resumed, the resumed run checked)"""
import json
import os
import subprocess
import sys
import tempfile

from report_expect import TINY_MODEL

MODELS = {"test": TINY_MODEL, "tiny": ["--preset", "tiny", "--micro-batch", "4", "--seq", "128"],
          "gpt2": ["--preset", "gpt2", "--precision", "bf16", "--micro-batch", "1", "--seq", "64"]}
args = sys.argv[1:]
model, configs = "test", [f"{z}{o}" for z in range(4) for o in ["", "o"]] + ["0s", "3or"]
while args and args[0].startswith("--"):
    if args[0] == "--model":
        model = args[1]
    elif args[0] == "--configs":
        configs = args[1].split(",")
    else:
        sys.exit(f"unknown option {args[0]}")
    args = args[2:]
K = int(args[0])
SHARDLAB = args[1]
MPIRUN = args[2:]
TOLERANCE = 0.05
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(args, out):
    cmd = MPIRUN + ["-np", str(K), SHARDLAB, "train", *MODELS[model], "--quiet", "--steps", "2",
                    "--out", out, *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return json.load(open(os.path.join(out, "report.json")))


with tempfile.TemporaryDirectory() as tmp:
    for config in configs:
        zero, offload, save, resume = int(config[0]), "o" in config, "s" in config, "r" in config
        name = (f"{model} N={K} zero{zero}{'+offload' if offload else ''}"
                f"{'+save' if save else ''}{'+resume' if resume else ''}")
        flags = ["--zero", str(zero)] + (["--offload"] if offload else []) + \
            (["--save-every", "1"] if save else [])
        out = os.path.join(tmp, name.replace(" ", "_"))
        if resume:
            run(flags + ["--stop-after", "1"], out)
            flags += ["--resume", out]
        rep = run(flags, out)
        for rank in rep["ranks"]:
            res, r = rank["resident"], rank["rank"]
            base = res["runtime_baseline_bytes"]
            check(base > 0, f"{name} rank {r}: no runtime baseline")
            peaks = []
            for ph in ["init", "training", "end"]:
                p = res["phases"][ph]
                rss, expl = p["rss_peak_bytes"], p["explained_peak_bytes"]
                held = p["reserve_and_staging_peak_bytes"]
                reserve = p["tracked_peak_bytes"] + p["reserve_above_tracked_bytes"]
                check(expl == base + p["code_mapped_bytes"] + held,
                      f"{name} rank {r} {ph}: explained is not baseline + code + held")
                check(reserve <= held <= reserve + p["host_staging_peak_bytes"],
                      f"{name} rank {r} {ph}: reserve + staging peak {held} outside "
                      f"[{reserve}, {reserve} + staging]")
                peaks.append((rss, expl))
                check(reserve >= p["tracked_peak_bytes"] > 0,
                      f"{name} rank {r} {ph}: reserve {reserve} below tracked "
                      f"{p['tracked_peak_bytes']}")
                check(p["untracked_bytes"] == rss - expl,
                      f"{name} rank {r} {ph}: untracked is not max RSS - explained")
                check(abs(rss - expl) <= TOLERANCE * expl,
                      f"{name} rank {r} {ph}: max RSS {rss} vs explained {expl}: "
                      f"{100 * (rss - expl) / expl:+.1f}%")
            rss, expl = max(peaks)
            check(res["peak_bytes"] == rss and res["explained_peak_bytes"] == expl,
                  f"{name} rank {r}: the run's peak is not its largest phase's")
            print(f"{name} rank {r}: baseline {base}, max RSS / explained per phase "
                  + ", ".join(f"{a}/{b} ({100 * (a - b) / b:+.1f}%)" for a, b in peaks))

if failures:
    sys.exit(f"{len(failures)} failure(s)")
print("OK")
