#!/usr/bin/env python3
"""Plots bench/prefetch_overlap.sh's results: per placement and prefetch, the median step time
(median over the runs of each run's median step) split into compute and exposed communication.
Also prints the table docs/BENCHMARKS.md shows. Usage: plot_prefetch_bench.py RESULTS.jsonl OUT.png"""
import json
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
keys = [(p, f) for p in ("per-rank-core", "reserved-core") for f in (0, 1)]
step, exposed = {}, {}
for k in keys:
    runs = [r for r in rows if (r["placement"], r["prefetch"]) == k]
    step[k] = statistics.median(r["median_step_ms"] for r in runs)
    exposed[k] = statistics.median(r["median_exposed_comm_ms"] for r in runs)
print("| placement | prefetch | median step (ms) | of it exposed communication (ms) | runs (step ms) |")
print("|---|---:|---:|---:|---|")
for k in keys:
    runs = ", ".join(f"{r['median_step_ms']:.0f}" for r in rows if (r["placement"], r["prefetch"]) == k)
    print(f"| {k[0]} | {k[1]} | {step[k]:.1f} | {exposed[k]:.1f} | {runs} |")
for p in ("per-rank-core", "reserved-core"):
    print(f"{p}: prefetch 1 / prefetch 0 step time = {step[(p, 1)] / step[(p, 0)]:.3f}")

fig, ax = plt.subplots(figsize=(7, 4))
labels = [f"{p}\nprefetch {f}" for p, f in keys]
compute = [step[k] - exposed[k] for k in keys]
ax.bar(labels, compute, color="#4c72b0", label="compute (and everything else)")
ax.bar(labels, [exposed[k] for k in keys], bottom=compute, color="#dd8452",
       label="exposed communication")
for i, k in enumerate(keys):
    ax.text(i, step[k] + 5, f"{step[k]:.0f} ms", ha="center")
ax.set_ylabel("median step time (ms)")
ax.set_title("ZeRO-3 on 2 ranks: gathering one unit ahead (--prefetch 1)")
ax.legend(loc="lower right")
ax.set_ylim(0, max(step.values()) * 1.15)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
