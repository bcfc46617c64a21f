#!/usr/bin/env python3
"""Stacked bars of per-rank memory by component, from `shardlab plan --compare --json` (stages
0-3 x offload) or `--sweep-ranks --json` output, or from a training report's per-rank
predictions. Device components stack on the left bar of each pair, host on the right.

Usage: plot_plan_memory.py PLAN.json OUT.png"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DEVICE = ["params", "grads", "master", "optimizer", "activations", "buffers", "kv_cache"]
HOST = ["host_master", "host_optimizer", "host_grads"]


def label(p, rows):
    ranks_vary = len({r["ranks"] for r in rows}) > 1
    if ranks_vary:
        return f"N={p['ranks']}"
    return f"ZeRO-{p['zero']}" + ("\n+offload" if p["offload"] else "")


def main(path, png):
    data = json.load(open(path))
    rows = data if isinstance(data, list) else [data]
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(rows) + 2), 4.5))
    colors = plt.cm.tab10.colors
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
