#!/usr/bin/env python3
"""Training runs side by side, from their report.json: how each was sharded, what a rank held,
and the bytes it sent per step by link class (intra-node, inter-node), measured and checked
against the plan's prediction. With --png, a picture of the same bytes: per run, one stacked bar
per rank (intra below, inter above). examples/hybrid.md and the hybrid-sharding benchmark
(bench/hybrid_tc.sh) use it.

Usage: compare_runs.py RUN_DIR... [--png OUT.png]"""
import argparse
import json
import os


def sharding(config):
    """The layout's name, as plan --compare writes it: flat, hsdp:S or hpz."""
    zero = f"ZeRO-{config['zero']}"
    group = config.get("shard_group") or ""
    if config.get("secondary_shard"):
        return f"{zero} hpZ ({config['secondary_shard']})"
    if group and group != "world":
        return f"{zero} HSDP ({group})"
    return f"{zero} flat"


def per_step_by_link(rank, steps):
    """The rank's bytes sent per step by link class, and whether each op met its prediction."""
    intra = inter = 0
    exact = True
    for op in rank["comm"].values():
        links = op.get("bytes_by_link") or {"intra_node": op["bytes_sent"], "inter_node": 0}
        intra += links["intra_node"]
        inter += links["inter_node"]
        exact = exact and op.get("predicted_bytes") == op["bytes_sent"]
        predicted = op.get("predicted_bytes_by_link")
        exact = exact and (predicted is None or predicted == links)
    return intra / steps, inter / steps, exact


def summarise(run_dir):
    report = json.load(open(os.path.join(run_dir, "report.json")))
    steps = report["ranks"][0]["time"]["steps"]
    ranks = [per_step_by_link(r, steps) for r in report["ranks"]]
    return {
        "name": os.path.basename(os.path.normpath(run_dir)),
        "layout": report.get("node_layout", ""),
        "sharding": sharding(report["config"]),
        "params": max(r["memory"]["params"]["peak_bytes"] for r in report["ranks"]),
        "device": max(r["memory"]["device_total"]["peak_bytes"] for r in report["ranks"]),
        "ranks": ranks,
        "step_ms": max(r["time"]["median_step_ms"] for r in report["ranks"]),
        "loss": report["steps"][-1]["loss"],
        "weights": report["final_params_sha256"][:8],
    }


def print_table(runs):
    print(f"{'run':<10} {'layout':<18} {'sharding':<22} {'params B':>10} {'device B':>10} "
          f"{'intra B/step':>13} {'inter B/step':>13} {'all inter':>10} {'= plan':>7} {'loss':>9} "
          f"{'weights':>9} {'step ms':>8}")
    for r in runs:
        intra = max(i for i, _, _ in r["ranks"])
        inter = max(o for _, o, _ in r["ranks"])
        crossing = sum(o for _, o, _ in r["ranks"])
        exact = "=" if all(e for _, _, e in r["ranks"]) else "≠"
        print(f"{r['name']:<10} {r['layout']:<18} {r['sharding']:<22} {r['params']:>10} "
              f"{r['device']:>10} {intra:>13.0f} {inter:>13.0f} {crossing:>10.0f} {exact:>7} "
              f"{r['loss']:>9.6f} {r['weights']:>9} {r['step_ms']:>8.1f}")
    print("\nparams, device: the largest peak over the ranks; intra, inter B/step: the most any rank\n"
          "sent per step over that link class; all inter: what all ranks together sent across\n"
          "nodes per step; = plan: every rank's bytes per op and per class as predicted; loss: the\n"
          "last step's; weights: the final fp32 weights' SHA-256, first 8 hex digits")


def plot(runs, png):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1.6 + 1.4 * len(runs), 3.8))
    x, ticks, labels, highest = 0.0, [], [], 0.0
    for i, r in enumerate(runs):
        start = x
        for k, (intra, inter, _) in enumerate(r["ranks"]):
            ax.bar(x, intra / 1e6, 0.8, color="#9ecae1", label="intra-node" if x == 0 else None)
            ax.bar(x, inter / 1e6, 0.8, bottom=intra / 1e6, color="#08519c",
                   label="inter-node" if x == 0 else None)
            ax.text(x, 0, str(k), ha="center", va="bottom", fontsize=6, color="white")
            x += 1
        ticks.append((start + x - 1) / 2)
        top = max(i + o for i, o, _ in r["ranks"]) / 1e6
        ax.text(ticks[-1], top, f"{r['step_ms']:.0f} ms/step", ha="center", va="bottom",
                fontsize=7)
        highest = max(highest, top)
        labels.append(f"{r['name']}\n{r['sharding']}")
        x += 1
    ax.set_xticks(ticks)
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("MB sent per step, per rank")
    ax.set_ylim(0, 1.15 * highest)
    ax.set_title(f"bytes by link class ({runs[0]['layout'] or 'one node'}), one bar per rank; "
                 "median step time above", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("runs", nargs="+", help="training runs' --out directories")
    ap.add_argument("--png", help="also draw the bytes by link class per rank and run")
    a = ap.parse_args()
    runs = [summarise(d) for d in a.runs]
    print_table(runs)
    if a.png:
        plot(runs, a.png)
        print(f"wrote {a.png}")


if __name__ == "__main__":
    main()
