#!/usr/bin/env python3
"""Step time at 2 ranks for ZeRO stages 0-3 with and without offload, preset tiny, micro-batch
8 x 256, bf16; and the share of each step spent in collectives (from the report's per-collective
seconds, the slower rank). Writes bench/results/zero_stages.{json,png}.
Usage: bench/zero_stages.py [--steps N]"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for zero in range(4):
            for offload in (False, True):
                out = os.path.join(tmp, f"z{zero}{offload}")
                cmd = [os.path.join(ROOT, "launch/mpirun_local.sh"), "-np", "2", os.path.join(ROOT, "build/shardlab"),
                       "train", "--preset", "tiny", "--micro-batch", "8", "--precision", "bf16", "--steps",
                       str(a.steps), "--warmup", "2", "--zero", str(zero), "--quiet", "--out", out]
                if offload:
                    cmd.append("--offload")
                subprocess.run(cmd, check=True, capture_output=True)
                rep = json.load(open(os.path.join(out, "report.json")))
                ms = [s["ms"] for s in rep["steps"][1:]]  # the first step warms caches
                total_s = sum(s["ms"] for s in rep["steps"]) / 1e3
                comm_s = max(sum(op["seconds"] for op in r["comm"].values()) for r in rep["ranks"])
                sent = max(sum(op["bytes_sent"] for op in r["comm"].values()) for r in rep["ranks"])
                row = {"zero": zero, "offload": offload, "ms_per_step": statistics.median(ms),
                       "comm_share": comm_s / total_s, "bytes_sent_per_step": sent // a.steps}
                rows.append(row)
                print(json.dumps(row), flush=True)
    os.makedirs(os.path.join(ROOT, "bench/results"), exist_ok=True)
    json.dump(rows, open(os.path.join(ROOT, "bench/results/zero_stages.json"), "w"), indent=2)
    fig, ax = plt.subplots(figsize=(7, 4))
    labels = [f"ZeRO-{r['zero']}" + ("\n+offload" if r["offload"] else "") for r in rows]
    comm = [r["ms_per_step"] * r["comm_share"] for r in rows]
    compute = [r["ms_per_step"] - c for r, c in zip(rows, comm)]
    ax.bar(labels, compute, label="compute + optimizer")
    ax.bar(labels, comm, bottom=compute, label="collectives")
    ax.set_ylabel("ms per step (median)")
    ax.set_title("GPT-2 tiny, 2 ranks x 1 core, micro-batch 8 x 256, bf16")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(ROOT, "bench/results/zero_stages.png"), dpi=110)


if __name__ == "__main__":
    main()
