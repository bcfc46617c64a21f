#!/usr/bin/env python3
"""Where a traced step's time goes, as a picture: one horizontal bar per op (milliseconds per
traced step, tools/trace_ops.py's numbers) for each trace given, side by side, and the paper
model's time for the same shapes on GPU (tools/roofline.py) as a black tick. The ops of the first
trace, largest first; the step span of each trace in the legend.

Usage: plot_trace_ops.py OUT.png --paper h100|h200|a100 LABEL=TRACE.json[.gz] [LABEL=TRACE ...]
  [--rank R] [--top N] [--title TEXT]"""
import argparse
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import roofline  # noqa: E402
import trace_ops  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("png")
    ap.add_argument("traces", nargs="+", help="LABEL=TRACE.json[.gz]")
    ap.add_argument("--paper", choices=sorted(roofline.GPUS), required=True)
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    runs = []
    for spec in a.traces:
        label, sep, path = spec.partition("=")
        if not sep:
            raise SystemExit(f"plot_trace_ops.py: {spec}: expected LABEL=TRACE.json")
        n, step_ms, rows = trace_ops.per_op(trace_ops.load(path), a.rank, a.paper)
        runs.append((label, step_ms, {name: (ms / n, paper / n) for (_, name), (_, ms, paper)
                                      in rows}))
    first = runs[0][2]
    ops = sorted(first, key=lambda op: -first[op][0])[:a.top][::-1]  # largest at the top
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(ops) + 1.6))
    height = 0.8 / len(runs)
    for i, (label, step_ms, times) in enumerate(runs):
        ys = [y + (i - (len(runs) - 1) / 2) * height for y in range(len(ops))]
        bars = ax.barh(ys, [times.get(op, (0.0, 0.0))[0] for op in ops], height,
                       label=f"{label} (step {step_ms:.1f} ms)")
        ax.bar_label(bars, fmt="%.2f", fontsize=7, padding=2)
    paper = [first[op][1] for op in ops]
    ax.scatter([p if p == p else 0 for p in paper], range(len(ops)), marker="|", s=300,
               color="black", label=f"paper model ({a.paper})", zorder=3)
    ax.set_yticks(range(len(ops)), ops)
    ax.set_xlabel("ms per step")
    ax.set_title(a.title or f"per-op time of a traced step, rank {a.rank}")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(a.png, dpi=110)
    print(f"wrote {a.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
