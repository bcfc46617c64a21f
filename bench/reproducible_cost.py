#!/usr/bin/env python3
"""What --reproducible costs (issue 23): step time, bytes a rank sends per step and peak tracked
device bytes, default against --reproducible, at 2 and 4 ranks, ZeRO-0 and ZeRO-3, preset tiny,
bf16, global batch 16 (micro-batch 8 / 4 x 256 tokens, one micro-batch a step). Each
configuration runs `--repeats` times; the table gives the median of each run's median step (the
first step warms caches) and the spread. Writes bench/results/reproducible_cost.{json,png}.
Usage: bench/reproducible_cost.py [--build build] [--steps 6] [--repeats 3]"""
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


def run(tmp, build, ranks, zero, reproducible, steps):
    out = os.path.join(tmp, f"n{ranks}z{zero}r{int(reproducible)}")
    cmd = [os.path.join(ROOT, "launch/mpirun_local.sh"), "-np", str(ranks),
           os.path.join(ROOT, build, "shardlab"), "train", "--preset", "tiny", "--precision", "bf16",
           "--micro-batch", str(16 // ranks), "--steps", str(steps), "--warmup", "1",
           "--zero", str(zero), "--quiet", "--out", out, "--overwrite"]
    if reproducible:
        cmd.append("--reproducible")
    subprocess.run(cmd, check=True, capture_output=True)
    rep = json.load(open(os.path.join(out, "report.json")))
    ms = statistics.median(s["ms"] for s in rep["steps"][1:])
    sent = max(sum(op["bytes_sent"] for op in r["comm"].values()) for r in rep["ranks"]) / steps
    peak = max(r["memory"]["device_total"]["peak_bytes"] for r in rep["ranks"])
    return ms, sent, peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for ranks in (2, 4):
            for zero in (0, 3):
                row = {"ranks": ranks, "zero": zero}
                for rep in (False, True):
                    runs = [run(tmp, a.build, ranks, zero, rep, a.steps) for _ in range(a.repeats)]
                    key = "reproducible" if rep else "default"
                    ms = [r[0] for r in runs]
                    row[key] = {"step_ms_median": statistics.median(ms), "step_ms_min": min(ms),
                                "step_ms_max": max(ms), "bytes_sent_per_step": runs[0][1],
                                "peak_device_bytes": runs[0][2]}
                d, r = row["default"], row["reproducible"]
                row["time_ratio"] = r["step_ms_median"] / d["step_ms_median"]
                row["bytes_ratio"] = r["bytes_sent_per_step"] / d["bytes_sent_per_step"]
                row["memory_ratio"] = r["peak_device_bytes"] / d["peak_device_bytes"]
                rows.append(row)
                print(f"N={ranks} ZeRO-{zero}: step {d['step_ms_median']:.0f} -> "
                      f"{r['step_ms_median']:.0f} ms (x{row['time_ratio']:.2f}; spread "
                      f"{d['step_ms_min']:.0f}-{d['step_ms_max']:.0f} / "
                      f"{r['step_ms_min']:.0f}-{r['step_ms_max']:.0f}), bytes/step "
                      f"{d['bytes_sent_per_step']/1e6:.1f} -> {r['bytes_sent_per_step']/1e6:.1f} MB "
                      f"(x{row['bytes_ratio']:.2f}), peak {d['peak_device_bytes']/1e6:.0f} -> "
                      f"{r['peak_device_bytes']/1e6:.0f} MB (x{row['memory_ratio']:.2f})",
                      flush=True)
    os.makedirs(os.path.join(ROOT, "bench/results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench/results/reproducible_cost.json"), "w") as f:
        json.dump(rows, f, indent=1)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    labels = [f"N={r['ranks']}\nZeRO-{r['zero']}" for r in rows]
    x = range(len(rows))
    for ax, (key, title, scale) in zip(axes, (("step_ms_median", "step time (ms)", 1),
                                              ("bytes_sent_per_step", "MB sent per step", 1e6),
                                              ("peak_device_bytes", "peak device MB", 1e6))):
        ax.bar([i - 0.2 for i in x], [r["default"][key] / scale for r in rows], 0.4,
               label="default")
        ax.bar([i + 0.2 for i in x], [r["reproducible"][key] / scale for r in rows], 0.4,
               label="--reproducible")
        ax.set_xticks(list(x), labels)
        ax.set_title(title)
    axes[0].legend()
    fig.suptitle("--reproducible's cost: tiny preset, bf16, global batch 16 x 256 tokens")
    fig.tight_layout()
    fig.savefig(os.path.join(ROOT, "bench/results/reproducible_cost.png"), dpi=110)


if __name__ == "__main__":
    main()
