#!/usr/bin/env python3
"""Stacked bars of per-rank memory by component.

From `shardlab plan --json` (one plan, `--compare`: stages 0-3 x offload, or `--sweep-ranks`):
for each plan a device bar and, where there is host memory (offload), a hatched host bar beside
it. From a training run's report.json: for every rank the measured peaks beside the plan's
predictions, device and host. `shardlab plan --plot` and `shardlab report` call this; tools/
report.py imports its helpers.

Bytes are shown in decimal units named on the axis (MB = 1e6 B, GB = 1e9 B), as shardlab prints
them, the unit picked from the largest bar so a tiny model does not read 0.000 GB.

Usage: plot_plan_memory.py PLAN.json|report.json OUT.png"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DEVICE = ["params", "grads", "master", "optimizer", "activations", "buffers", "kv_cache"]
HOST = ["host_master", "host_optimizer", "host_grads", "host_staging"]
# report.json's device categories (core/memory_tracker.h), in the plan's order; workspace is the
# GEMM libraries' scratch, predicted where the plan knows the library's (null otherwise) and kept
# out of the plan's device total, so a plan's own bars leave it out.
REPORT = ["params", "grads", "master", "optimizer", "activations", "comm_buffers", "workspace"]
COLORS = plt.cm.tab20.colors
# One colour per concept in every plot: the plan's "buffers" is the report's "comm_buffers".
COLOR = {name: COLORS[k] for k, name in enumerate(DEVICE)}
COLOR.update({"comm_buffers": COLOR["buffers"], "workspace": COLORS[14], "host": COLORS[8]})
COLOR.update({name: COLORS[k + len(DEVICE)] for k, name in enumerate(HOST)})
LABEL = {"workspace": "workspace (GEMM scratch)", "host": "host total (offload)"}


def byte_unit(largest):
    """(divisor, axis label) for bytes: the largest decimal unit that keeps `largest` >= 1."""
    for scale, name in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if largest >= scale:
            return scale, f"{name} (1e{len(str(int(scale))) - 1} B)"
    return 1.0, "bytes"


def human_bytes(b):
    """'9.64 MB', '320 B': a bar's own label."""
    scale, label = byte_unit(b)
    return f"{b:.0f} B" if scale == 1.0 else f"{b / scale:.3g} {label.split()[0]}"


def legend_outside(ax, **kw):
    """The legend right of the axes, so it never hides a bar."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False, **kw)


def stack(ax, x, width, parts, scale, hatch="", seen=None):
    """One stacked bar at x from [(name, bytes)]; each name enters the legend once, and only if
    it is non-zero somewhere. Returns the top in bytes."""
    bottom = 0.0
    for name, b in parts:
        if not b:
            continue
        first = seen is not None and name not in seen
        if seen is not None:
            seen.add(name)
        ax.bar(x, b / scale, width, bottom=bottom / scale, color=COLOR[name], hatch=hatch,
               edgecolor="white" if not hatch else "black", linewidth=0.4,
               label=LABEL.get(name, name) if first else None)
        bottom += b
    return bottom


def pair_ticks(ax, centers, group_labels, bar_xs, bar_labels):
    """Small labels under each bar (device / host, measured / plan) and the group label below."""
    ax.set_xticks(bar_xs, bar_labels, fontsize=7)
    for c, text in zip(centers, group_labels):
        ax.annotate(text, (c, 0), xycoords=("data", "axes fraction"), xytext=(0, -24),
                    textcoords="offset points", ha="center", va="top", fontsize=9)


def plan_label(p, rows):
    if len({r["ranks"] for r in rows}) > 1:
        return f"N={p['ranks']}"
    return f"ZeRO-{p['zero']}" + (" + offload" if p["offload"] else "")


def plot_plan(rows, png):
    """Device (and host, hatched) per-rank bytes for each plan in rows."""
    scale, unit = byte_unit(max(max(p["per_rank"]["device_total"], p["per_rank"]["host_total"])
                                for p in rows))
    has_host = any(p["per_rank"]["host_total"] for p in rows)
    fig, ax = plt.subplots(figsize=(max(6.5, (1.6 if has_host else 1.0) * len(rows) + 3.5), 4.8))
    seen, xs, labels = set(), [], []
    width = 0.38 if has_host else 0.6
    for i, p in enumerate(rows):
        m = p["per_rank"]
        dx = -0.2 if has_host else 0.0
        top = stack(ax, i + dx, width, [(n, m.get(n, 0)) for n in DEVICE], scale, seen=seen)
        ax.annotate(human_bytes(top), (i + dx, top / scale), ha="center", va="bottom", fontsize=7)
        xs.append(i + dx), labels.append("device")
        if has_host:
            top = stack(ax, i + 0.2, width, [(n, m.get(n, 0)) for n in HOST], scale, "//", seen)
            ax.annotate(human_bytes(top), (i + 0.2, top / scale), ha="center", va="bottom",
                        fontsize=7)
            xs.append(i + 0.2), labels.append("host")
    pair_ticks(ax, range(len(rows)), [plan_label(p, rows) for p in rows], xs, labels)
    ax.set_xlim(-0.75, len(rows) - 0.25)  # one plan: bars, not walls
    ax.set_ylabel(f"predicted bytes per rank, {unit}")
    first = rows[0]
    where = "" if len({r["ranks"] for r in rows}) > 1 else f", {first['ranks']} rank(s)"
    stage = f", ZeRO-{first['zero']}" if len({(r['zero'], r['offload']) for r in rows}) == 1 else ""
    if stage and first["offload"]:
        stage += " + offload"
    ax.set_title(f"{first['model']['name']}: per-rank memory, plan{where}{stage}, "
                 f"micro-batch {first['micro_batch']}", fontsize=10)
    ax.margins(y=0.1)
    legend_outside(ax)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"wrote {png}")


def predicted_device(mem):
    return sum(mem[c]["predicted_bytes"] or 0 for c in REPORT)


def plot_report(rep, png):
    """Per rank: each device category's measured peak beside the plan's prediction, and the host
    arena's (offload) the same way. Categories peak at different moments, so the stack of their
    peaks can exceed the device total's peak: a black tick marks that peak."""
    ranks = rep["ranks"]
    has_host = any(r["memory"]["host"]["peak_bytes"] or r["memory"]["host"]["predicted_bytes"]
                   for r in ranks)
    per_group = 4 if has_host else 2
    largest = max(max(sum(r["memory"][c]["peak_bytes"] for c in REPORT), predicted_device(r["memory"]),
                      r["memory"]["host"]["peak_bytes"], r["memory"]["host"]["predicted_bytes"] or 0)
                  for r in ranks)
    scale, unit = byte_unit(largest)
    fig, ax = plt.subplots(figsize=(max(8.5, 0.75 * per_group * len(ranks) + 4), 5))
    width, seen, xs, labels = 0.8 / per_group, set(), [], []
    offsets = [(k - (per_group - 1) / 2) * width for k in range(per_group)]
    for i, r in enumerate(ranks):
        mem = r["memory"]
        x = [i + o for o in offsets]
        stack(ax, x[0], width * 0.95, [(c, mem[c]["peak_bytes"]) for c in REPORT], scale, seen=seen)
        peak = mem["device_total"]["peak_bytes"]
        ax.hlines(peak / scale, x[0] - width / 2, x[0] + width / 2, colors="black", linewidth=2,
                  label="device total's peak (one moment)" if i == 0 else None)
        stack(ax, x[1], width * 0.95, [(c, mem[c]["predicted_bytes"] or 0) for c in REPORT], scale,
              "//", seen)
        xs += x[:2]
        labels += ["device\nmeasured", "device\nplan"]
        if has_host:
            stack(ax, x[2], width * 0.95, [("host", mem["host"]["peak_bytes"])], scale, seen=seen)
            stack(ax, x[3], width * 0.95, [("host", mem["host"]["predicted_bytes"] or 0)], scale,
                  "//", seen)
            xs += x[2:]
            labels += ["host\nmeasured", "host\nplan"]
    pair_ticks(ax, range(len(ranks)), [f"rank {r['rank']}" for r in ranks], xs, labels)
    ax.tick_params(axis="x", pad=2)
    ax.set_ylabel(f"bytes per rank, {unit}")
    c = rep["config"]
    ax.set_title(f"Per-rank memory, measured vs plan: ZeRO-{c['zero']}"
                 f"{' + offload' if c['offload'] else ''}, {c['precision']}, {len(ranks)} rank(s)\n"
                 "each bar stacks every category's own peak; hatched: the plan", fontsize=10)
    ax.margins(y=0.08)
    legend_outside(ax)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"wrote {png}")


def main(path, png):
    data = json.load(open(path))
    if isinstance(data, dict) and "ranks" in data and "steps" in data:
        return plot_report(data, png)
    plot_plan(data if isinstance(data, list) else [data], png)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[-1])
    main(sys.argv[1], sys.argv[2])
