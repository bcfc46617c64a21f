#!/usr/bin/env python3
"""Stacked bars of per-rank memory by component.

From `shardlab plan --compare --json` (stages 0-3 x offload) or `--sweep-ranks --json`: device
components on the left bar of each pair, host on the right. From a training run's report.json:
for every rank, the measured peaks (left) beside the plan's predictions (right).

Usage: plot_plan_memory.py PLAN.json|report.json OUT.png"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DEVICE = ["params", "grads", "master", "optimizer", "activations", "buffers", "kv_cache"]
HOST = ["host_master", "host_optimizer", "host_grads", "host_staging"]


def label(p, rows):
    ranks_vary = len({r["ranks"] for r in rows}) > 1
    if ranks_vary:
        return f"N={p['ranks']}"
    return f"ZeRO-{p['zero']}" + ("\n+offload" if p["offload"] else "")


REPORT = ["params", "grads", "master", "optimizer", "activations", "comm_buffers", "host"]


def plot_report(rep, png):
    ranks = rep["ranks"]
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(ranks) + 2), 4.5))
    colors = plt.cm.tab20.colors
    for i, r in enumerate(ranks):
        for side, key in ((-0.2, "peak_bytes"), (0.2, "predicted_bytes")):
            bottom = 0.0
            for k, cat in enumerate(REPORT):
                v = (r["memory"][cat][key] or 0) / 1e6
                ax.bar(i + side, v, 0.38, bottom=bottom, color=colors[k], hatch="" if side < 0 else "//",
                       label=cat if i == 0 and side < 0 else None)
                bottom += v
    ax.set_xticks(range(len(ranks)), [f"rank {r['rank']}" for r in ranks])
    ax.set_ylabel("MB (1e6 B); left: measured peak, right: predicted")
    c = rep["config"]
    ax.set_title(f"ZeRO-{c['zero']}{' + offload' if c['offload'] else ''}, {c['precision']}: measured vs predicted")
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"wrote {png}")


def main(path, png):
    data = json.load(open(path))
    if isinstance(data, dict) and "ranks" in data and "steps" in data:
        return plot_report(data, png)
    rows = data if isinstance(data, list) else [data]
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(rows) + 2), 4.5))
    colors = plt.cm.tab20.colors
    for i, p in enumerate(rows):
        m = p["per_rank"]
        bottom = 0.0
        for k, name in enumerate(DEVICE):
            v = m.get(name, 0) / 1e9
            ax.bar(i - 0.2, v, 0.38, bottom=bottom, color=colors[k], label=name if i == 0 else None)
            bottom += v
        bottom = 0.0
        for k, name in enumerate(HOST):
            v = m.get(name, 0) / 1e9
            ax.bar(i + 0.2, v, 0.38, bottom=bottom, color=colors[k + len(DEVICE)], hatch="//",
                   label=name if i == 0 else None)
            bottom += v
    ax.set_xticks(range(len(rows)), [label(p, rows) for p in rows])
    ax.set_ylabel("bytes per rank (GB = 1e9 B); left: device, right: host")
    first = rows[0]
    ax.set_title(f"{first['model']['name']}: per-rank memory, micro-batch {first['micro_batch']}")
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"wrote {png}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
