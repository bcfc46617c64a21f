#!/usr/bin/env python3
"""bench/time_model.sh's results: per configuration, the measured median step (median over the
runs, with the spread min..max) beside the time model's prediction, and the same for compute and
exposed communication. Prints a markdown table (docs/BENCHMARKS.md) and draws a PNG: left the
step predicted vs measured with the +-15% band, right per configuration each component predicted
(hatched) beside measured. Usage: plot_time_model.py RESULTS.jsonl OUT.png"""
import json
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
configs = list(dict.fromkeys(r["config"] for r in rows))
by = {c: [r for r in rows if r["config"] == c] for c in configs}


def med(c, key):
    return statistics.median(r[key] for r in by[c])


print("| configuration | runs | measured step, median (min..max) ms | predicted ms | error | "
      "compute meas / pred ms | exposed comm meas / pred ms | missed most | predicted critical path |")
print("|---|---|---|---|---|---|---|---|---|")
within = 0
for c in configs:
    steps = [r["step_measured"] for r in by[c]]
    m, p = statistics.median(steps), med(c, "step_predicted")
    err = (p - m) / m
    within += abs(err) <= 0.15
    dc = abs(med(c, "compute_predicted") - med(c, "compute_measured"))
    de = abs(med(c, "exposed_comm_predicted") - med(c, "exposed_comm_measured"))
    print(f"| {c} | {len(steps)} | {m:.1f} ({min(steps):.1f}..{max(steps):.1f}) | {p:.1f} | "
          f"{100 * err:+.0f}% | {med(c, 'compute_measured'):.1f} / {med(c, 'compute_predicted'):.1f} | "
          f"{med(c, 'exposed_comm_measured'):.1f} / {med(c, 'exposed_comm_predicted'):.1f} | "
          f"{'compute' if dc >= de else 'exposed comm'} | {by[c][0]['critical_path']} |")
print(f"\n{within} of {len(configs)} configurations within 15% of the measured median step.")

fig, (a, b) = plt.subplots(1, 2, figsize=(14, 5.5), gridspec_kw={"width_ratios": [1, 2]})
meas = [med(c, "step_measured") for c in configs]
pred = [med(c, "step_predicted") for c in configs]
lo = [min(r["step_measured"] for r in by[c]) for c in configs]
hi = [max(r["step_measured"] for r in by[c]) for c in configs]
a.errorbar(meas, pred, xerr=[[m - l for m, l in zip(meas, lo)], [h - m for m, h in zip(meas, hi)]],
           fmt="o")
top = max(meas + pred) * 1.1
a.plot([0, top], [0, top], "k-", lw=0.8)
a.fill_between([0, top], [0, 0.85 * top], [0, 1.15 * top], color="0.9", label="+-15%")
a.set_xlabel("measured median step (ms; bar: min..max over runs)")
a.set_ylabel("predicted step (ms)")
a.set_xlim(0, top), a.set_ylim(0, top)
a.legend()
xs = range(len(configs))
w = 0.2
for i, (key, colour) in enumerate([("compute", "C0"), ("exposed_comm", "C1")]):
    b.bar([x + (2 * i - 1.5) * w for x in xs], [med(c, f"{key}_measured") for c in configs], w,
          color=colour, label=f"{key} measured")
    b.bar([x + (2 * i - 0.5) * w for x in xs], [med(c, f"{key}_predicted") for c in configs], w,
          color=colour, hatch="//", alpha=0.5, label=f"{key} predicted")
b.set_xticks(list(xs))
b.set_xticklabels(configs, rotation=35, ha="right", fontsize=8)
b.set_ylabel("ms per step (median)")
b.legend(fontsize=8)
fig.suptitle("Time model vs measured step, per component (bench/time_model.sh)")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
