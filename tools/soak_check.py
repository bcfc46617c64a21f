#!/usr/bin/python3
"""Checks a soak run (scripts/soak.sh) for growth: prints a table, draws a plot, exits non-zero
when something is not flat.

Usage: /usr/bin/python3 tools/soak_check.py DIR [--warmup W] [--tolerance 0.01] [--png FILE]

DIR is scripts/soak.sh's record directory (run/, ref/, rss.tsv, soak.json) or a bare run
directory (steps.jsonl, report.json). Checked, per rank, after the first W steps:

  tracked   the tracker's current bytes per category at the end of every step exactly constant
            from step W on. Read from each steps.jsonl row's "memory" (`train --log-memory`:
            {"tracked": [{...} per rank], "rss": [bytes per rank]}), or a top-level "tracked":
            {"<category>": bytes} (rank 0's) or [{...}, ...]; and, when rows have it, "reserved":
            the caching allocators' reserved bytes now (bytes, or {"device": b, "host": b}; or a
            list of either, per rank), alike. Steps that ended with a validation pass are compared
            among themselves (a validation leaves its logits allocated until the next forward).
            Also, when DIR has ref/report.json
            (a run of W steps with the same shapes): every category's current bytes and the
            caching allocators' peak reserved bytes at the end of that run equal to the soak's.
  rss       the process's resident set at the end within --tolerance (1%) of its value after
            step W, and its highest value after step W within --tolerance above it. Read from
            each steps.jsonl row's "rss": bytes (rank 0's) or [bytes, ...] (per rank), else from
            DIR/rss.tsv (VmRSS sampled from /proc while the run trained; only samples taken after
            step W finished and before the last step finished count).

Exit status: 0 flat; 1 something grew (or shrank); 2 a record the check needs is missing
(per-step tracked bytes, or any RSS record).
"""
import argparse
import csv
import json
import os
import sys

OK, GREW, MISSING = 0, 1, 2


def load_jsonl(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    pass  # a line a killed run left half written
    return rows


def per_rank(value):
    """A row's field as {rank: value}: a list is one entry per rank, anything else rank 0's."""
    if value is None:
        return {}
    if isinstance(value, list):
        return {r: v for r, v in enumerate(value)}
    return {0: value}


def mib(b):
    return b / 2**20


class Table:
    def __init__(self):
        self.rows = []

    def add(self, rank, record, base, end, top, verdict, note=""):
        self.rows.append((rank, record, base, end, top, verdict, note))

    def print(self, warmup, last):
        head = ["rank", "record", f"after step {warmup}", f"end (step {last})", "max after warm-up",
                "end / after warm-up", "result"]
        print("| " + " | ".join(head) + " |")
        print("|---|---|---:|---:|---:|---:|---|")
        for rank, record, base, end, top, verdict, note in sorted(self.rows, key=lambda r: r[0]):
            def cell(v):
                return "—" if v is None else f"{v:,}"
            ratio = "—" if base in (None, 0) or end is None else f"{end / base:.4f}"
            if base == 0 and end == 0:
                ratio = "="
            print(f"| {rank} | {record} | {cell(base)} | {cell(end)} | {cell(top)} | {ratio} | "
                  f"{verdict}{' (' + note + ')' if note else ''} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--tolerance", type=float, default=0.01)
    ap.add_argument("--png", default=None, help="plot (default DIR/soak.png)")
    a = ap.parse_args()

    run = os.path.join(a.dir, "run") if os.path.isdir(os.path.join(a.dir, "run")) else a.dir
    steps_path = os.path.join(run, "steps.jsonl")
    if not os.path.exists(steps_path):
        print(f"soak_check: no {steps_path}")
        return MISSING
    rows = load_jsonl(steps_path)
    if not rows:
        print(f"soak_check: {steps_path} is empty")
        return MISSING
    last = max(r["step"] for r in rows)
    W = a.warmup
    if last <= W:
        print(f"soak_check: the run has {last} steps, not more than the warm-up ({W})")
        return MISSING
    report = json.load(open(os.path.join(run, "report.json"))) \
        if os.path.exists(os.path.join(run, "report.json")) else None
    ref_path = os.path.join(a.dir, "ref", "report.json")
    ref = json.load(open(ref_path)) if os.path.exists(ref_path) else None
    meta_path = os.path.join(a.dir, "soak.json")
    meta = json.load(open(meta_path)) if os.path.exists(meta_path) else {}

    status = OK
    notes = []
    table = Table()

    # Per-step tracked bytes: {rank: {category: [(step, bytes)]}}; steps that ended with a
    # validation pass (which leaves its logits allocated until the next forward) are a kind of
    # their own, checked against each other.
    tracked = {}
    validated = {row["step"] for row in rows if "val_loss" in row}
    for row in rows:
        for rank, cats in per_rank(row.get("tracked", row.get("memory", {}).get("tracked"))).items():
            for cat, b in cats.items():
                tracked.setdefault(rank, {}).setdefault(cat, []).append((row["step"], int(b)))
        # Optional: the caching allocators' reserved bytes now, bytes or {"device": .., "host": ..}.
        for rank, r in per_rank(row.get("reserved")).items():
            for arena, b in (r.items() if isinstance(r, dict) else [("device", r)]):
                tracked.setdefault(rank, {}).setdefault(f"reserved {arena}", []).append(
                    (row["step"], int(b)))
    # Per-step RSS, in-process: {rank: [(step, bytes)]}; else samples from rss.tsv.
    rss = {}
    rss_source = "steps.jsonl \"rss\" (end of each step)"
    for row in rows:
        for rank, b in per_rank(row.get("rss", row.get("memory", {}).get("rss"))).items():
            rss.setdefault(rank, []).append((row["step"], int(b)))
    rss_in_loop = {}
    if rss:
        rss_in_loop = {r: [(s, b) for s, b in v if s >= W] for r, v in rss.items()}
    else:
        tsv = os.path.join(a.dir, "rss.tsv")
        if os.path.exists(tsv):
            rss_source = "rss.tsv (VmRSS sampled from /proc)"
            with open(tsv) as f:
                for rec in csv.DictReader(f, delimiter="\t"):
                    rss.setdefault(int(rec["rank"]), []).append(
                        (int(rec["step"]), int(rec["rss_bytes"])))
            # In the loop and past the warm-up: W <= steps finished < last (after the last row
            # the run consolidates, samples and reports: not part of the steady state).
            rss_in_loop = {r: [(s, b) for s, b in v if W <= s < last] for r, v in rss.items()}

    # 1. Tracked bytes, every step.
    if tracked:
        for rank in sorted(tracked):
            for cat, series in tracked[rank].items():
                after = [(s, b) for s, b in series if s >= W]
                if not after:
                    continue
                kinds = {}  # with validation or not: (first value, steps, steps that differ)
                for s, b in after:
                    k = kinds.setdefault(s in validated, [b, 0, []])
                    k[1] += 1
                    if b != k[0]:
                        k[2].append(s)
                plain = kinds.get(False, kinds.get(True))
                end, top = after[-1][1], max(b for _, b in after)
                moved = sorted(x for k in kinds.values() for x in k[2])
                note = f"{len(after)} steps"
                if True in kinds and False in kinds and kinds[True][0] != kinds[False][0]:
                    note += (f"; {kinds[True][1]} steps with validation: "
                             f"{kinds[True][0] - kinds[False][0]:+,}")
                if moved:
                    status = max(status, GREW)
                    table.add(rank, f"tracked {cat}", plain[0], end, top, "NOT FLAT",
                              f"{note}; {len(moved)} differ, first at step {moved[0]}")
                else:
                    table.add(rank, f"tracked {cat}", plain[0], end, top, "flat", note)
    else:
        status = max(status, MISSING)
        notes.append("per-step tracked bytes are not in steps.jsonl (no \"tracked\" field): "
                     "flatness at every step is not checked")

    # 2. Tracked bytes at two points: the reference run's end (step W) against the soak's end.
    if ref and report:
        ref_val, run_val = ("val_loss" in ref["steps"][-1]), ("val_loss" in report["steps"][-1])
        if ref_val != run_val and not tracked:
            notes.append(f"the reference run's last step {'has' if ref_val else 'has no'} "
                         f"validation and the soak's {'has' if run_val else 'has no'}: a "
                         f"validation leaves its logits allocated, activations differ")
        ref_by_rank = {int(x["rank"]): x for x in ref["ranks"]}
        for x in report["ranks"]:
            rank = int(x["rank"])
            rr = ref_by_rank.get(rank)
            if rr is None:
                continue
            for cat, m in x["memory"].items() if not tracked else ():
                base, end = rr["memory"][cat]["current_bytes"], m["current_bytes"]
                same = base == end
                if not same:
                    status = max(status, GREW)
                table.add(rank, f"report {cat} current", base, end, None,
                          "equal" if same else "DIFFERENT", "reference run vs soak, report.json")
            for arena in ("device_peak_bytes", "host_peak_bytes"):
                base, end = rr["reserved"][arena], x["reserved"][arena]
                if base != end:
                    status = max(status, GREW)
                table.add(rank, f"reserved {arena.split('_')[0]} peak", base, end, None,
                          "equal" if base == end else "DIFFERENT",
                          "caching allocators, reference run vs soak")
    elif not tracked:
        notes.append("no reference run (ref/report.json): tracked bytes not checked at all")

    # 3. RSS.
    if not rss_in_loop or not any(rss_in_loop.values()):
        status = max(status, MISSING)
        notes.append("no RSS record after the warm-up (neither \"rss\" in steps.jsonl nor "
                     "rss.tsv samples)")
    else:
        for rank in sorted(rss_in_loop):
            v = rss_in_loop[rank]
            if not v:
                status = max(status, MISSING)
                notes.append(f"rank {rank}: no RSS record after the warm-up")
                continue
            base, end, top = v[0][1], v[-1][1], max(b for _, b in v)
            ok = abs(end / base - 1) <= a.tolerance and top / base - 1 <= a.tolerance
            if not ok:
                status = max(status, GREW)
            table.add(rank, "rss", base, end, top,
                      f"within {a.tolerance:.0%}" if ok else f"NOT within {a.tolerance:.0%}",
                      f"{len(v)} records, steps {v[0][0]}..{v[-1][0]}")

    if meta:
        print(f"soak: {meta.get('steps')} steps, {meta.get('ranks')} ranks, ZeRO-{meta.get('zero')}, "
              f"wall {meta.get('wall_s', 0):.1f} s, CPU {meta.get('cpu')}")
        print(f"command: {meta.get('command')}")
    print(f"RSS from {rss_source}; tolerance {a.tolerance:.0%}; warm-up {W} steps\n")
    table.print(W, last)
    print()
    for n in notes:
        print(f"note: {n}")

    png = a.png or os.path.join(a.dir, "soak.png")
    plot(png, rss, tracked, ref, report, W, last, a.tolerance, rss_source, meta)
    print(f"\nplot: {png}")
    print({OK: "result: flat", GREW: "result: NOT FLAT",
           MISSING: "result: records missing (see the notes)"}[status])
    return status


def plot(png, rss, tracked, ref, report, W, last, tol, rss_source, meta):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 7.5), sharex=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    bounds = []  # the y range: the bands and every record after the warm-up (start-up is clipped)
    for i, rank in enumerate(sorted(rss)):
        v = sorted(rss[rank])
        c = colors[i % len(colors)]
        xs = [s for s, _ in v]
        ys = [mib(b) for _, b in v]
        ax1.plot(xs, ys, ".-", ms=2, lw=0.8, color=c, label=f"rank {rank}")
        after = [b for s, b in v if s >= W]
        if after:
            base = mib(after[0])
            bounds += [base * (1 - 1.5 * tol), base * (1 + 1.5 * tol), mib(min(after)),
                       mib(max(after))]
            for k, f in enumerate((1 - tol, 1 + tol)):
                ax1.axhline(base * f, color=c, ls="--", lw=0.8, alpha=0.7,
                            label=f"rank {rank}: ±{tol:.0%} of its RSS after step {W}"
                            if k == 0 else None)
    if bounds:
        ax1.set_ylim(min(bounds), max(bounds))
    ax1.axvline(W, color="grey", ls=":", lw=1)
    ax1.set_ylabel("RSS (MiB)")
    ax1.set_title(f"RSS per rank — {rss_source}")
    ax1.legend(fontsize=8, loc="best")
    ax1.grid(alpha=0.3)

    if tracked:
        for i, rank in enumerate(sorted(tracked)):
            totals = {}
            for cat, series in tracked[rank].items():
                if cat == "device_total" or cat.startswith("reserved"):  # a sum; not tracked
                    continue
                for s, b in series:
                    totals[s] = totals.get(s, 0) + b
            xs = sorted(totals)
            ax2.plot(xs, [mib(totals[s]) for s in xs], ["-", "--", ":", "-."][i % 4],
                     lw=2.4 - 0.6 * (i % 3), color=colors[i % len(colors)], label=f"rank {rank}")
        ax2.set_title("tracked bytes at the end of each step, all categories (device + host)")
    elif ref and report:
        ref_by_rank = {int(x["rank"]): x for x in ref["ranks"]}
        for i, x in enumerate(report["ranks"]):
            rank = int(x["rank"])
            rr = ref_by_rank.get(rank)
            if rr is None:
                continue
            tot = lambda r: r["memory"]["device_total"]["current_bytes"] + \
                r["memory"]["host"]["current_bytes"]
            ax2.plot([W, last], [mib(tot(rr)), mib(tot(x))], "--", marker="os^v"[i % 4],
                     ms=12 - 4 * (i % 3), fillstyle="none" if i % 2 == 0 else "full",
                     color=colors[i % len(colors)], label=f"rank {rank}")
        ax2.set_title(f"tracked bytes (device + host), current: end of a {W}-step reference run "
                      f"and end of the soak\n(per-step values not recorded in steps.jsonl)")
    ax2.axvline(W, color="grey", ls=":", lw=1)
    ax2.set_ylabel("tracked (MiB)")
    ax2.set_xlabel("step")
    ax2.legend(fontsize=8, loc="best")
    ax2.grid(alpha=0.3)
    ax2.ticklabel_format(axis="y", useOffset=False)
    ax1.ticklabel_format(axis="y", useOffset=False)
    if meta:
        fig.suptitle(f"soak: tiny preset, {meta.get('steps')} steps, {meta.get('ranks')} ranks, "
                     f"ZeRO-{meta.get('zero')}, {meta.get('cpu')}", fontsize=11)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
