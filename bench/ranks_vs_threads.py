#!/usr/bin/env python3
"""Two ways to use two cores, per token: 1 rank x 2 threads against 2 ranks x 1 thread with ZeRO-3,
the same global batch (8 x 256 tokens per step: micro-batch 8 on one rank, 4 on each of two),
preset tiny, fp32 and bf16. The two-rank run binds each rank to its own core (mpirun --bind-to
core) and, for contrast, once unbound. Target (issue 12): 2 x 1 within 10% of 1 x 2 tokens/s.
Prints one JSON line per run; writes bench/results/ranks_vs_threads.json.
Usage: bench/ranks_vs_threads.py [--steps N]"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARDLAB = os.path.join(ROOT, "build/shardlab")


def mpirun(np, bind):
    cmd = ["mpirun", "-np", str(np), "--bind-to", bind, "--map-by", "core"]
    if bind == "none":
        cmd.append("--oversubscribe")
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def run(tmp, name, np, threads, micro_batch, precision, steps, bind):
    out = os.path.join(tmp, name)
    cmd = mpirun(np, bind) + [SHARDLAB, "train", "--preset", "tiny", "--micro-batch", str(micro_batch),
                              "--precision", precision, "--zero", "3", "--threads", str(threads),
                              "--steps", str(steps), "--warmup", "2", "--quiet", "--out", out]
    env = dict(os.environ, OMPI_MCA_btl_vader_single_copy_mechanism="none")
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    rep = json.load(open(os.path.join(out, "report.json")))
    ms = statistics.median(s["ms"] for s in rep["steps"][1:])  # the first step warms caches
    tokens = np * micro_batch * 256
    row = {"run": name, "ranks": np, "threads": threads, "bind": bind, "precision": precision,
           "ms_per_step": ms, "tokens_per_s": tokens / (ms / 1e3)}
    print(json.dumps(row), flush=True)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for p in ("fp32", "bf16"):
            one = run(tmp, f"1x2-{p}", 1, 2, 8, p, a.steps, "none")
            two = run(tmp, f"2x1-{p}-bound", 2, 1, 4, p, a.steps, "core")
            loose = run(tmp, f"2x1-{p}-unbound", 2, 1, 4, p, a.steps, "none")
            for r in (two, loose):
                r["vs_1x2"] = r["tokens_per_s"] / one["tokens_per_s"]
            rows += [one, two, loose]
    os.makedirs(os.path.join(ROOT, "bench/results"), exist_ok=True)
    json.dump(rows, open(os.path.join(ROOT, "bench/results/ranks_vs_threads.json"), "w"), indent=2)
    for r in rows:
        extra = f"  {r['vs_1x2']:.3f}x of 1x2" if "vs_1x2" in r else ""
        print(f"{r['run']:>18}: {r['ms_per_step']:8.1f} ms/step {r['tokens_per_s']:8.0f} tokens/s{extra}")


if __name__ == "__main__":
    main()
