#!/usr/bin/env python3
"""The plots of one training run, and a one-page summary that embeds them.

Reads DIR/report.json (written by `shardlab train --out DIR` at the end of a run) and DIR/
steps.jsonl (one row per step; after a --resume it holds the whole history, report.json only the
last leg), and writes into OUTDIR (default DIR):
  loss.png     training loss per step, validation loss where it was measured
  memory.png   per rank, each memory category's measured peak beside the plan's prediction
  phases.png   per rank, the device (and host) peak of each phase of a step
  comm.png     per collective, bytes sent beside the prediction, and the bus bandwidth
  time.png     step time split into compute and exposed communication, per step and per rank
  links.png    per rank and per collective, bytes sent inside the node and across nodes, each
               beside the model's prediction
  summary.md   the key numbers and every plot with a sentence on what to read from it
and prints the summary's path last. `shardlab report DIR` runs this; it also runs on its own:
  /usr/bin/python3 tools/report.py DIR [--out OUTDIR]"""
import argparse
import json
import math
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_plan_memory import byte_unit, human_bytes, legend_outside, plot_report  # noqa: E402

PHASES = ["init", "forward", "backward", "step", "validation"]
RANK_COLORS = plt.cm.tab10.colors


def fail(message):
    print(f"report.py: {message}", file=sys.stderr)
    sys.exit(2)


def load(run_dir):
    """report.json and the step rows (steps.jsonl where it is readable, else report.json's)."""
    path = os.path.join(run_dir, "report.json")
    if not os.path.isdir(run_dir):
        fail(f"{run_dir} is not a directory; run `shardlab train --out {run_dir}` first")
    if not os.path.isfile(path):
        fail(f"{run_dir} has no report.json; run `shardlab train --out {run_dir}` (a run writes it "
             "when it ends)")
    try:
        rep = json.load(open(path))
    except ValueError as e:
        fail(f"{path} is not valid JSON ({e}); run `shardlab train --out {run_dir} --overwrite` again")
    if not isinstance(rep, dict) or not {"config", "ranks", "steps"} <= rep.keys():
        fail(f"{path} is not a shardlab training report (no config/ranks/steps)")
    steps = rep["steps"]
    log = os.path.join(run_dir, "steps.jsonl")
    if os.path.isfile(log):
        rows = []
        for line in open(log):
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass  # a last line a killed run left half written
        if rows:
            steps = rows
    return rep, steps


def save(fig, out_dir, name):
    path = os.path.join(out_dir, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")
    return name


def run_title(rep):
    c, m = rep["config"], rep["config"]["model"]
    return (f"{len(rep['ranks'])} rank(s), ZeRO-{c['zero']}{' + offload' if c['offload'] else ''}, "
            f"{c['precision']}, {m['layers']} layer{'s' if m['layers'] != 1 else ''} x {m['hidden']} hidden")


def plot_loss(rep, steps, out_dir):
    fig, ax = plt.subplots(figsize=(8, 4.5))
    if steps:
        ax.plot([s["step"] for s in steps], [s["loss"] for s in steps], lw=1.2,
                label="training loss (this step's batch)")
        val = [s for s in steps if "val_loss" in s]
        if val:
            ax.plot([s["step"] for s in val], [s["val_loss"] for s in val], "o-", color="C3",
                    label="validation loss (held-out text)")
        vocab = rep["config"]["model"]["vocab"]
        ax.axhline(math.log(vocab), color="gray", ls=":", lw=1,
                   label=f"untrained model: ln {vocab} = {math.log(vocab):.2f}")
        skipped = [s for s in steps if s.get("skipped")]
        if skipped:
            ax.plot([s["step"] for s in skipped], [s["loss"] for s in skipped], "x", color="black",
                    ms=8, label="skipped step (gradient not finite)")
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no steps were run", ha="center", transform=ax.transAxes)
    ax.set_xlabel("step")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("cross-entropy, nats per token")
    ax.set_title(f"Loss: {run_title(rep)}", fontsize=10)
    ax.grid(alpha=0.3)
    return save(fig, out_dir, "loss.png")


def phase_order(rep):
    names = list(PHASES)
    for r in rep["ranks"]:
        names += [p for p in r["phases"] if p not in names]
    return [p for p in names if any(p in r["phases"] for r in rep["ranks"])]


def plot_phases(rep, out_dir):
    """Grouped bars: for each phase, one bar per rank (device), hatched host bars with offload."""
    ranks, phases = rep["ranks"], phase_order(rep)
    has_host = any(ph["host_peak_bytes"] for r in ranks for ph in r["phases"].values())
    arenas = [("peak_bytes", "device", "")] + ([("host_peak_bytes", "host", "//")] if has_host else [])
    scale, unit = byte_unit(max([ph[k] for r in ranks for ph in r["phases"].values()
                                 for k, _, _ in arenas] + [1]))
    bars = len(ranks) * len(arenas)
    width = 0.8 / bars
    fig, ax = plt.subplots(figsize=(max(8.5, 0.35 * bars * len(phases) + 3), 4.5))
    for a, (key, arena, hatch) in enumerate(arenas):
        for i, r in enumerate(ranks):
            k = a * len(ranks) + i
            xs = [j + (k - (bars - 1) / 2) * width for j in range(len(phases))]
            ys = [r["phases"].get(p, {}).get(key, 0) / scale for p in phases]
            ax.bar(xs, ys, width * 0.95, color=RANK_COLORS[i % 10], hatch=hatch,
                   edgecolor="black" if hatch else "white", linewidth=0.4,
                   label=f"rank {r['rank']} {arena}")
    predicted = sum(ranks[0]["memory"][c]["predicted_bytes"] or 0
                    for c in ["params", "grads", "master", "optimizer", "activations", "comm_buffers"])
    ax.axhline(predicted / scale, color="black", ls="--", lw=1,
               label="plan: device total\n(rank 0; no workspace)")
    ax.set_xticks(range(len(phases)), phases)
    ax.set_ylabel(f"peak bytes in the phase, {unit}")
    ax.set_title(f"Memory peak per phase of a step: {run_title(rep)}", fontsize=10)
    legend_outside(ax)
    return save(fig, out_dir, "phases.png")


def comm_rows(rank):
    """[(name, measured bytes, predicted bytes or None, bus bandwidth GB/s or None)], one rank."""
    rows = [(op, s["bytes_sent"], s["predicted_bytes"], s["busbw_gbps"])
            for op, s in sorted(rank["comm"].items())]
    hd = rank["host_device_bytes"]
    if hd["total"] or hd["predicted"]:
        rows.append(("offload copies\n(device<->host)", hd["total"], hd["predicted"], None))
    return rows


def log_axis(a, fmt):
    """A log-scale y axis whose ticks read as units ('1 MB', '10 GB/s'), not 1e-4."""
    a.set_yscale("log")
    a.yaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt(v)))
    a.yaxis.set_minor_formatter(NullFormatter())


def human_rate(gbps):
    return human_bytes(gbps * 1e9) + "/s"


def grouped_bars(a, ranks, table, value, fmt):
    """One bar per rank for each row of `table` (rows per rank), labelled with its value.
    Returns the x position of every (rank, row)."""
    width = 0.8 / len(ranks)
    xs = {}
    for i, (r, rows) in enumerate(zip(ranks, table)):
        for j, row in enumerate(rows):
            x = j + (i - (len(ranks) - 1) / 2) * width
            xs[i, j] = x
            v = value(row)
            if not v:
                continue
            a.bar(x, v, width * 0.9, color=RANK_COLORS[i % 10], label=f"rank {r['rank']}"
                  if j == min(k for k, row2 in enumerate(rows) if value(row2)) else None)
            a.annotate(fmt(v), (x, v), ha="center", va="bottom", fontsize=6,
                       rotation=90 if len(ranks) > 2 else 0, xytext=(0, 2),
                       textcoords="offset points")
    return xs, width


def plot_comm(rep, out_dir):
    """Left: bytes each rank sent per collective over the run (log scale: the scalar all-reduces
    are a few bytes beside megabytes), the plan's prediction as a black tick. Right: bus bandwidth
    (bytes sent / seconds inside the collective)."""
    ranks = rep["ranks"]
    table = [comm_rows(r) for r in ranks]
    names = [row[0] for row in table[0]]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(max(12, 0.9 * len(names) * len(ranks) + 6), 4.8))
    xs, width = grouped_bars(ax, ranks, table, lambda row: row[1], human_bytes)
    plan_drawn = False
    for (i, j), x in xs.items():
        predicted = table[i][j][2]
        if predicted:
            ax.hlines(predicted, x - width / 2, x + width / 2, colors="black", lw=2,
                      label=None if plan_drawn else "plan's prediction")
            plan_drawn = True
    collectives = [[row for row in rows if row[3] is not None] for rows in table]
    grouped_bars(bx, ranks, collectives, lambda row: row[3], human_rate)
    ax.set_xticks(range(len(names)), names, fontsize=8)
    bx.set_xticks(range(len(collectives[0])), [row[0] for row in collectives[0]], fontsize=8)
    for a, fmt in ((ax, human_bytes), (bx, human_rate)):
        if a.patches:
            log_axis(a, fmt)
            a.margins(y=0.15)
        else:
            alone = " (a single rank has no one to send to)" if len(ranks) == 1 else ""
            a.text(0.5, 0.5, f"no bytes sent{alone}", ha="center", transform=a.transAxes)
            a.set_yticks([])
    ax.set_ylabel("bytes sent per rank over the run (log scale)")
    ax.set_title("Bytes per collective, measured vs plan", fontsize=10)
    bx.set_ylabel("bus bandwidth (log scale)")
    bx.set_title("Bus bandwidth = bytes sent / time in the collective", fontsize=10)
    fig.suptitle(f"Communication over {ranks[0]['time']['steps']} step(s): {run_title(rep)}",
                 fontsize=10)
    if ax.get_legend_handles_labels()[0]:
        legend_outside(bx, handles=ax.get_legend_handles_labels()[0],
                       labels=ax.get_legend_handles_labels()[1])
    return save(fig, out_dir, "comm.png")


LINKS = [("intra_node", "inside the node", "C0"), ("inter_node", "across nodes", "C3")]


def link_ops(rank):
    """The collectives of one rank that report bytes by link class, in name order."""
    return [(op, s) for op, s in sorted(rank["comm"].items()) if "bytes_by_link" in s]


def plot_links(rep, out_dir):
    """Bytes by link class: the first panel all collectives together, then one panel per
    collective; in each, per rank, the bytes sent inside the node stacked under those sent across
    nodes, and the model's prediction per class as black ticks at the same heights (a tick on each
    boundary means measured == predicted per link)."""
    ranks = rep["ranks"]
    ops = [op for op, s in link_ops(ranks[0]) if s["bytes_sent"] or s["predicted_bytes"]]
    panels = [("all collectives", None)] + [(op, op) for op in ops]
    fig, axes = plt.subplots(1, len(panels), figsize=(max(6, 3.2 * len(panels) + 2), 4.2),
                             squeeze=False)
    rows = {}
    for r in ranks:
        for op, s in link_ops(r):
            rows[r["rank"], op] = s
    def panel_sum(rank, op):  # the taller of measured and predicted, for the axis
        return sum(max(s["bytes_sent"], s["predicted_bytes"] or 0)
                   for (q, o), s in rows.items() if q == rank and (op is None or o == op))
    unit_all = byte_unit(max([1] + [panel_sum(r["rank"], None) for r in ranks]))[1]
    for a, (title, op) in zip(axes[0], panels):
        top_bytes = max([1] + [panel_sum(r["rank"], op) for r in ranks])
        scale, unit = byte_unit(top_bytes)  # each panel its own unit: scalars beside megabytes
        for i, r in enumerate(ranks):
            mine = [s for (q, o), s in rows.items() if q == r["rank"] and (op is None or o == op)]
            measured = {k: sum(s["bytes_by_link"][k] for s in mine) for k, _, _ in LINKS}
            known = all(s.get("predicted_bytes_by_link") for s in mine)
            bottom = 0.0
            for k, label, color in LINKS:
                a.bar(i, measured[k] / scale, 0.6, bottom=bottom / scale, color=color,
                      label=label if i == 0 else None)
                bottom += measured[k]
            if known and mine:
                pred = {k: sum(s["predicted_bytes_by_link"][k] for s in mine) for k, _, _ in LINKS}
                top = 0.0
                for k, _, _ in LINKS:
                    top += pred[k]
                    a.hlines(top / scale, i - 0.35, i + 0.35, colors="black", lw=1.5,
                             label="model's prediction" if i == 0 and k == "intra_node" else None)
                same = all(pred[k] == measured[k] for k, _, _ in LINKS)
                a.annotate("=" if same else "≠", (i, bottom / scale), ha="center", va="bottom",
                           fontsize=9, xytext=(0, 2), textcoords="offset points")
        a.set_xticks(range(len(ranks)), [f"rank {r['rank']}" for r in ranks], fontsize=7,
                     rotation=45 if len(ranks) > 4 else 0)
        a.set_title(title, fontsize=9, pad=14)
        a.set_ylim(0, top_bytes / scale * 1.12)  # room for the marks above the tallest bar
        a.set_ylabel(unit, fontsize=8)
    axes[0][0].set_ylabel(f"bytes sent over the run, {unit_all}")
    legend_outside(axes[0][-1], handles=axes[0][0].get_legend_handles_labels()[0],
                   labels=axes[0][0].get_legend_handles_labels()[1])
    layout = rep.get("node_layout", "nodes as detected")
    fig.suptitle(f"Bytes by link class ({layout}) over {ranks[0]['time']['steps']} step(s): "
                 f"{run_title(rep)}", fontsize=10)
    return save(fig, out_dir, "links.png")


def link_table(rep):
    """summary.md's rows: per rank and collective, bytes per link class measured vs the model,
    marked = where they agree (as the training run's own table does)."""
    lines = ["| rank | collective | intra-node | predicted | | inter-node | predicted | |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rep["ranks"]:
        for op, s in link_ops(r):
            p = s.get("predicted_bytes_by_link")
            cells = []
            for k, _, _ in LINKS:
                m = s["bytes_by_link"][k]
                cells += [str(m), "—" if p is None else str(p[k]),
                          "" if p is None else ("=" if p[k] == m else "≠")]
            lines.append(f"| {r['rank']} | {op} | " + " | ".join(cells) + " |")
    return lines


def plot_time(rep, steps, out_dir):
    """Left: each step's time, compute below exposed communication. Right: per rank, the run's
    total split the same way."""
    ranks = rep["ranks"]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [3, 1]})
    xs = [s["step"] for s in steps]
    compute = [s["compute_ms"] for s in steps]
    exposed = [s["exposed_comm_ms"] for s in steps]
    if len(steps) <= 100:
        ax.bar(xs, compute, 0.9, color="C0", label="compute")
        ax.bar(xs, exposed, 0.9, bottom=compute, color="C1", label="exposed communication")
    elif steps:
        ax.stackplot(xs, compute, exposed, colors=["C0", "C1"],
                     labels=["compute", "exposed communication"])
    ax.set_xlabel("step")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("ms per step (rank 0)")
    ax.set_title("Step time: compute vs waiting for communication", fontsize=10)
    if steps:
        ax.legend(fontsize=8)
    total = max(r["time"]["step_seconds"] for r in ranks)
    scale, unit = (1.0, "seconds") if total >= 1 else (1e-3, "ms")
    comp = [r["time"]["compute_seconds"] / scale for r in ranks]
    expo = [r["time"]["exposed_comm_seconds"] / scale for r in ranks]
    names = [f"rank {r['rank']}" for r in ranks]
    bx.bar(names, comp, 0.6, color="C0", label="compute")
    bx.bar(names, expo, 0.6, bottom=comp, color="C1", label="exposed comm.")
    for i, (c, e) in enumerate(zip(comp, expo)):
        if c + e > 0:
            bx.annotate(f"{100 * e / (c + e):.0f}% exposed", (i, c + e), ha="center",
                        va="bottom", fontsize=7)
    bx.set_xlim(-0.75, len(ranks) - 0.25)  # one rank: a bar, not a wall
    bx.set_ylabel(f"{unit}, summed over those steps")
    # After --resume, report.json's times cover the last leg only; steps.jsonl every step.
    bx.set_title(f"Per rank, over {ranks[0]['time']['steps']} step(s)", fontsize=10)
    bx.margins(y=0.12)
    fig.suptitle(f"Time: {run_title(rep)}", fontsize=10)
    return save(fig, out_dir, "time.png")


def median(values):
    return statistics.median(values) if values else float("nan")


def time_model_table(ranks):
    """summary.md's rows of `train --profile`: per rank, the time model's prediction beside the
    measured medians, and the term that missed most (docs/TIME.md); none without a profile."""
    rows = [r for r in ranks if "vs" in r["time"]]
    if not rows:
        return []
    out = [f"Step time predicted by the time model (profile {rows[0]['time']['profile']}) vs "
           "measured (medians; measured compute = step - exposed communication):", "",
           "| rank | step pred / meas (ms) | compute pred / meas (ms) | exposed comm pred / meas (ms) "
           "| missed most | predicted critical path |", "|---|---|---|---|---|---|"]
    for r in rows:
        vs = r["time"]["vs"]
        cell = lambda k: (f"{vs[k]['predicted_ms']:.1f} / {vs[k]['measured_ms']:.1f} "
                          f"({100 * vs[k]['error']:+.0f}%)")
        out.append(f"| {r['rank']} | {cell('step')} | {cell('compute')} | {cell('exposed_comm')} | "
                   f"{vs['missed_most']} | {r['time']['predicted']['critical_path']} |")
    return out + [""]


def resident_table(ranks):
    """summary.md's rows: per rank and phase, max RSS beside what explains it (the runtime baseline
    + the caching allocators' reserve) and the untracked rest."""
    lines = ["Per-rank resident memory (max RSS) by phase, explained = the runtime baseline "
             "measured before the model is built + code paged in since + the peak of the caching "
             "allocators' reserve (tracked bytes, workspace included, and the reserve above them) "
             "and declared host staging together (docs/MEMORY.md section 11):", "",
             "| rank | phase | max RSS | explained | tracked | untracked |", "|---|---|---|---|---|---|"]
    for r in ranks:
        res = r["resident"]
        for ph in ["init", "training", "end"]:
            p = res["phases"][ph]
            u = p["untracked_bytes"]
            lines.append(f"| {r['rank']} | {ph} | {human_bytes(p['rss_peak_bytes'])} | "
                         f"{human_bytes(p['explained_peak_bytes'])} | "
                         f"{human_bytes(p['tracked_peak_bytes'])} | "
                         f"{'-' if u < 0 else ''}{human_bytes(abs(u))} |")
    return lines


def summary(rep, steps, run_dir, plots):
    c, m = rep["config"], rep["config"]["model"]
    ranks = rep["ranks"]
    last_step = steps[-1]["step"] if steps else 0
    val = [s for s in steps if "val_loss" in s]
    lines = [f"# Training run `{os.path.abspath(run_dir)}`", ""]
    family = {"gpt2": "GPT-2", "llama": "Llama"}.get(m.get("arch", "gpt2"), m.get("arch"))
    kv = m.get("kv_heads", m["heads"])
    heads = f"{m['heads']} heads" + (f" ({kv} key/value)" if kv != m["heads"] else "")
    lines += [f"{family} with {m['layers']} layers, hidden {m['hidden']}, {heads}, "
              f"vocabulary {m['vocab']}, context {m['context']}; {len(ranks)} rank(s), "
              f"ZeRO-{c['zero']}{' + CPU optimizer offload' if c['offload'] else ''}"
              f"{', prefetch ' + str(c['prefetch']) if c.get('prefetch') else ''}, {c['precision']}, "
              f"micro-batch {c['micro_batch']} x {c['seq']} tokens, grad-accum {c['grad_accum']} "
              f"(global batch {c['global_batch_seqs']} sequences), lr {c['lr']:.3g} "
              f"({c['schedule']}), data: {c['data']}.", ""]
    stopped = (f" of {c['steps']} (stopped early; continue with `shardlab train --resume "
               f"{run_dir} --out {run_dir}` and the run's flags)" if last_step < c["steps"] else "")
    lines += ["| | |", "|---|---|", f"| steps run | {last_step}{stopped} |"]
    if steps:
        lines.append(f"| training loss | {steps[0]['loss']:.3f} at step {steps[0]['step']} -> "
                     f"{steps[-1]['loss']:.3f} at step {last_step} |")
    if val:
        lines.append(f"| validation loss | {val[0]['val_loss']:.3f} at step {val[0]['step']} -> "
                     f"{val[-1]['val_loss']:.3f} at step {val[-1]['step']} |")
    else:
        lines.append("| validation loss | not measured |")
    # The first step pays for warm-up (allocations, thread start): left out of the medians.
    timed = steps[1:] if len(steps) > 1 else steps
    tokens = median([s["tokens_per_s"] for s in timed])
    lines.append(f"| tokens/s, all ranks together (median over steps 2..) | {tokens:.0f} |")
    lines.append(f"| step time (median) | {median([s['ms'] for s in timed]):.1f} ms, of it exposed "
                 f"communication {median([s['exposed_comm_ms'] for s in timed]):.1f} ms |")
    if rep.get("skipped_steps"):
        lines.append(f"| skipped steps (non-finite gradient) | {rep['skipped_steps']} |")
    lines += ["", "Per-rank peak memory, measured vs the plan (device: the sum of the plan's "
              "categories; the measured total is the highest the device held at one moment, "
              "workspace included):", "",
              "| rank | device peak | device plan | host peak | host plan |",
              "|---|---|---|---|---|"]
    for r in ranks:
        mem = r["memory"]
        plan_dev = sum(mem[k]["predicted_bytes"] or 0 for k in
                       ["params", "grads", "master", "optimizer", "activations", "comm_buffers"])
        lines.append(f"| {r['rank']} | {human_bytes(mem['device_total']['peak_bytes'])} | "
                     f"{human_bytes(plan_dev)} | {human_bytes(mem['host']['peak_bytes'])} | "
                     f"{human_bytes(mem['host']['predicted_bytes'] or 0)} |")
    lines.append("")
    lines += time_model_table(ranks)
    if all("phases" in r.get("resident", {}) for r in ranks):
        lines += resident_table(ranks) + [""]
    if any(link_ops(r) for r in ranks):
        lines += [f"Bytes each rank sent by link class ({rep.get('node_layout', 'nodes as detected')}), "
                  "measured vs the communication model:", ""] + link_table(rep) + [""]
    for name, (heading, text) in plots:
        lines += [f"## {heading}", "", f"![{name}]({name})", "", text, ""]
    return "\n".join(lines)


def explain(rep):
    """(heading, what to read from it) for each plot."""
    vocab = rep["config"]["model"]["vocab"]
    return {
        "loss.png": ("Loss", "The training loss of each step's batch (noisy) and the validation "
                     "loss on held-out text: both should fall from about ln "
                     f"{vocab} = {math.log(vocab):.2f} (an untrained model, the dotted line); "
                     "validation rising while training falls is over-fitting."),
        "memory.png": ("Memory per rank, measured vs plan", "For every rank, each memory "
                       "category's highest value (solid) beside what `shardlab plan` predicted "
                       "(hatched); with offload, the host bytes beside them too. Equal heights "
                       "colour by colour mean the plan is exact; workspace (kernel scratch) is not "
                       "in the plan. The black tick is the device total's peak: lower than the "
                       "stack, because the categories peak at different moments."),
        "phases.png": ("Memory peak per phase", "The highest device (and, with offload, host) "
                       "bytes during each phase of a step, per rank; the dashed line is the "
                       "plan's device total. The backward pass is usually the peak: activations "
                       "and gradients are alive together."),
        "comm.png": ("Communication", "Left: bytes each rank sent per collective over the run "
                     "(log scale); the black tick is the plan's prediction, so a tick on top of a "
                     "bar means the plan was exact. Right: bus bandwidth, how fast the transport "
                     "moved them; small collectives are latency-bound and look slow."),
        "links.png": ("Bytes by link class", "Per rank, the bytes sent to ranks on the same node "
                      "(blue: shared memory, NVLink) under those sent to other nodes (red: the "
                      "network), for all collectives and for each; the black ticks are the "
                      "communication model's prediction per class, and '=' over a bar says both "
                      "classes match it exactly. A flat ring sends everything to its right "
                      "neighbour, so only the ranks at a node's edge send across nodes."),
        "time.png": ("Step time", "Each step split into compute (blue) and exposed communication "
                     "(orange: time compute waited for the communication stream), and per rank "
                     "over the whole run. A large orange share means communication is not hidden "
                     "behind compute: more ranks than cores, too small a batch, or try --prefetch "
                     "with ZeRO-3."),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="a training run's --out directory")
    ap.add_argument("--out", help="where the PNGs and summary.md go (default: DIR)")
    a = ap.parse_args()
    rep, steps = load(a.dir)
    out_dir = a.out or a.dir
    os.makedirs(out_dir, exist_ok=True)
    names = [plot_loss(rep, steps, out_dir)]
    plot_report(rep, os.path.join(out_dir, "memory.png"))
    names += ["memory.png", plot_phases(rep, out_dir), plot_comm(rep, out_dir),
              plot_time(rep, steps, out_dir)]
    if any(link_ops(r) for r in rep["ranks"]):  # reports written before issue 21 have no split
        names.append(plot_links(rep, out_dir))
    path = os.path.join(out_dir, "summary.md")
    with open(path, "w") as f:
        f.write(summary(rep, steps, a.dir, [(n, explain(rep)[n]) for n in names]))
    print(f"summary: {path}")


if __name__ == "__main__":
    main()
