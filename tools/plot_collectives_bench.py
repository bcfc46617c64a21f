#!/usr/bin/env python3
"""Draws bus bandwidth against message size from `shardlab collectives bench --json` output:
one panel per operation, one line per algorithm, and the memcpy ceiling if given.

Usage: tools/plot_collectives_bench.py BENCH.json OUT.png [--ceiling GBPS]"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("json")
    ap.add_argument("png")
    ap.add_argument("--ceiling", type=float, help="memcpy GB/s to draw as a dashed line")
    a = ap.parse_args()
    rows = json.load(open(a.json))
    ops = list(dict.fromkeys(r["op"] for r in rows))
    fig, axes = plt.subplots(1, len(ops), figsize=(5 * len(ops), 4), squeeze=False)
    for ax, op in zip(axes[0], ops):
        for algo in dict.fromkeys(r["algo"] for r in rows):
            pts = [(r["bytes"], r["busbw_gbps"]) for r in rows if r["op"] == op and r["algo"] == algo]
            if pts:
                ax.plot([p[0] / 2**20 for p in pts], [p[1] for p in pts], marker="o", label=algo)
        if a.ceiling:
            ax.axhline(a.ceiling, linestyle="--", color="gray", label="memcpy")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("buffer S (MiB)")
        ax.set_ylabel("bus bandwidth (GB/s, 1e9 B/s)")
        ax.set_title(f"{op}, {rows[0]['ranks']} ranks, {rows[0]['dtype']}")
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(a.png, dpi=110)
    print(f"wrote {a.png}")


if __name__ == "__main__":
    main()
