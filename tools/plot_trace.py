#!/usr/bin/env python3
"""A picture of a `shardlab train --trace` file: the timeline of every rank's tracks (nested spans
stacked downwards, coloured by kind; a span too short to see is drawn two pixels wide) over the
device memory each rank tracks.

For a quick look without a browser; ui.perfetto.dev or chrome://tracing show the same file
interactively. Usage: plot_trace.py TRACE.json OUT.png [--step N | --from-ms A --to-ms B]
(--step N: the time of traced step N, on every rank)"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

COLOURS = {"step": "#d9d9d9", "model": "#9ecae1", "op": "#3182bd", "collective": "#e6550d",
           "copy": "#31a354", "host": "#756bb1"}
LABELS = {"step": "step / forward / backward", "model": "model part (block, head)", "op": "op (kernel)",
          "collective": "collective", "copy": "host <-> device copy", "host": "host AdamW (offload)"}


def depths(spans):
    """Nesting depth of each span on one track (spans sorted by start)."""
    stack, out = [], []
    for e in spans:
        while stack and stack[-1] <= e["ts"]:
            stack.pop()
        out.append(len(stack))
        stack.append(e["ts"] + e["dur"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--from-ms", type=float)
    ap.add_argument("--to-ms", type=float)
    ap.add_argument("--step", type=int, help="show only this traced step")
    a = ap.parse_args()
    events = json.load(open(a.trace))["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    spans = sorted((e for e in events if e["ph"] == "X"), key=lambda e: (e["ts"], -e["dur"]))
    if not spans:
        raise SystemExit(f"plot_trace.py: {a.trace} holds no spans (the run stopped before the first "
                         "step it was to trace?)")
    t0 = min(e["ts"] for e in spans)
    lo = a.from_ms if a.from_ms is not None else 0
    hi = a.to_ms if a.to_ms is not None else max(e["ts"] + e["dur"] - t0 for e in spans) / 1e3
    if a.step is not None:
        steps = [e for e in spans if e["cat"] == "step" and e["name"] == f"step {a.step}"]
        if not steps:
            traced = sorted({e["name"] for e in spans if e["cat"] == "step" and e["name"].startswith("step ")})
            raise SystemExit(f"plot_trace.py: step {a.step} is not in the trace; it holds {', '.join(traced)}")
        lo = min(e["ts"] - t0 for e in steps) / 1e3
        hi = max(e["ts"] + e["dur"] - t0 for e in steps) / 1e3
        pad = 0.02 * (hi - lo)
        lo, hi = lo - pad, hi + pad
    tracks = sorted(names)
    ranks = sorted({p for p, _ in tracks})
    fig, (ax, mem) = plt.subplots(2, 1, figsize=(14, 1.0 + 0.55 * len(tracks) + 2.4), sharex=True,
                                  gridspec_kw={"height_ratios": [0.55 * len(tracks) + 0.6, 2.2]})
    min_width = (hi - lo) / 700  # about two pixels: a 10-microsecond copy stays visible
    for row, key in enumerate(tracks):
        track = [e for e in spans if (e["pid"], e["tid"]) == key]
        levels = depths(track)
        deepest = max(levels, default=0) + 1
        h = 0.8 / deepest
        for e, d in zip(track, levels):
            if e["cat"] == "step" and d == 0 and e["name"].startswith("step ") and lo <= (e["ts"] - t0) / 1e3 < hi:
                ax.text((e["ts"] - t0) / 1e3, row - 0.42, e["name"], fontsize=7, va="bottom")
            ax.broken_barh([((e["ts"] - t0) / 1e3, max(e["dur"] / 1e3, min_width))], (row - 0.4 + d * h, h),
                           facecolors=COLOURS.get(e["cat"], "grey"), linewidth=0)
    ax.set_yticks(range(len(tracks)))
    ax.set_yticklabels([f"rank {p} {names[(p, t)]}" for p, t in tracks])
    ax.invert_yaxis()
    ax.set_xlim(lo, hi)
    used = sorted({e["cat"] for e in spans}, key=list(COLOURS).index)
    ax.legend(handles=[Patch(color=COLOURS[c], label=LABELS[c]) for c in used], ncol=len(used),
              loc="lower center", bbox_to_anchor=(0.5, 1.0), fontsize=8, frameon=False)
    fig.suptitle(a.trace.split("/")[-1] + ": every rank's streams, nested spans stacked downwards "
                 "(a collective's span includes waiting for its peers)", fontsize=11)
    for rank in ranks:
        samples = sorted((e for e in events if e["ph"] == "C" and e["pid"] == rank
                          and e["name"] == "device memory (MB)"), key=lambda e: e["ts"])
        xs = [(e["ts"] - t0) / 1e3 for e in samples]
        ys = [sum(e["args"].values()) for e in samples]
        mem.step(xs, ys, where="post", label=f"rank {rank}")
    mem.set_ylabel("tracked device\nmemory (MB)")
    mem.set_xlabel("time since the trace started (ms)")
    mem.legend(fontsize=8)
    mem.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)


if __name__ == "__main__":
    main()
