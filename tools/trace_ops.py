#!/usr/bin/env python3
"""Per-op time table of a `shardlab train --trace` file: for one rank, each op (span of kind `op`
on the compute stream, and collectives, copies and host AdamW tiles on their streams) that starts
inside a traced step, with its calls and milliseconds per traced step and its share of the step's
time, largest first, as a Markdown table. The numbers behind docs/GPU.md's "where one step's time
goes"; no matplotlib needed, so it runs wherever python3 does (the GPU lease prints it). With
--paper GPU, each op's expected time on that GPU from its traced shapes (tools/roofline.py, the
paper model of docs/GPU.md) stands beside the measured one, and the ratio says which op missed.

Usage: trace_ops.py TRACE.json[.gz] [--rank R] [--top N] [--paper h100|h200|a100]"""
import argparse
import collections
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import roofline  # noqa: E402


def per_op(events, rank, paper=None):
    """(traced steps, ms per step, rows): rows ((kind, op), [calls, ms, paper ms]) summed over the
    traced steps, largest first; paper ms is nan for an op the paper has no shapes for."""
    spans = [e for e in events if e.get("ph") == "X" and e.get("pid") == rank]
    steps = [e for e in spans if e["cat"] == "step" and e["name"].startswith("step ")]
    if not steps:
        raise SystemExit(f"trace_ops.py: rank {rank} has no traced step in this trace")
    n = len(steps)
    step_ms = sum(e["dur"] for e in steps) / 1e3 / n
    windows = [(e["ts"], e["ts"] + e["dur"]) for e in steps]
    acc = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for e in spans:
        # Only what started inside a traced step: a run's final validation is traced too.
        inside = any(lo <= e["ts"] < hi for lo, hi in windows)
        if inside and e["cat"] in ("op", "collective", "copy", "host"):
            # A collective is named by its purpose ("allgather: gather unit h.3"): group by kind.
            key = (e["cat"], e["name"].split(":")[0])
            acc[key][0] += 1
            acc[key][1] += e["dur"] / 1e3
            c = roofline.cost(e["name"], e.get("args", {})) if paper and e["cat"] == "op" else None
            acc[key][2] += (roofline.seconds(c, paper, launches=roofline.launches(e["name"], e.get("args", {})))
                            * 1e3 if c else float("nan"))
    return n, step_ms, sorted(acc.items(), key=lambda kv: -kv[1][1])


def load(path):
    """A trace file's events (.json, or .json.gz as the repository keeps them)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)["traceEvents"]


def table(events, rank, top, paper=None):
    n, step_ms, rows = per_op(events, rank, paper)
    lines = [f"rank {rank}: {n} traced step(s), {step_ms:.3f} ms per step (the step span)", "",
             "| op | stream kind | calls/step | ms/step | share of step | us/call |"
             + (f" paper ms/step ({paper}) | measured / paper |" if paper else ""),
             "|---|---|---|---|---|---|" + ("---|---|" if paper else "")]
    for (cat, name), (calls, ms, paper_ms) in rows[:top]:
        line = (f"| {name} | {cat} | {calls / n:g} | {ms / n:.3f} | {ms / n / step_ms:.1%} | "
                f"{ms / calls * 1e3:.1f} |")
        if paper:
            known = paper_ms == paper_ms  # nan: an op the paper has no shapes for
            line += f" {paper_ms / n:.3f} | {ms / paper_ms:.2f}x |" if known else " - | - |"
        lines.append(line)
    ops_ms = sum(v[1] for (cat, _), v in rows if cat == "op") / n
    lines += ["", f"compute-stream ops together: {ops_ms:.3f} ms per step ({ops_ms / step_ms:.1%} "
              "of the step; the rest is gaps: launch overhead, waits for copies or collectives)"]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--paper", choices=sorted(roofline.GPUS))
    a = ap.parse_args()
    print(table(load(a.trace), a.rank, a.top, a.paper))
    return 0


if __name__ == "__main__":
    sys.exit(main())
