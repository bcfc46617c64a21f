#!/usr/bin/env python3
"""Bar chart of training tokens/s, shardlab against PyTorch eager, from the JSON lines that
bench/model_step_vs_torch.sh writes. Usage: plot_step_bench.py RESULTS.jsonl OUT.png"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(path, png):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    tiny = [r for r in rows if r.get("model") == "tiny"]
    precisions = ["fp32", "bf16"]
    peers = ["shardlab", next(r["peer"] for r in tiny if r["peer"] != "shardlab")]
    fig, ax = plt.subplots(figsize=(6, 4))
    width = 0.38
    top = max(r["tokens_per_s"] for r in tiny)
    ax.set_ylim(0, top * 1.3)  # room for the legend above the bars
    for k, peer in enumerate(peers):
        vals = [next(r["tokens_per_s"] for r in tiny if r["peer"] == peer and r["precision"] == p) for p in precisions]
        bars = ax.bar([i + (k - 0.5) * width for i in range(len(precisions))], vals, width, label=peer)
        ax.bar_label(bars, fmt="%.0f")
    ax.set_xticks(range(len(precisions)), precisions)
    ax.set_ylabel("training tokens / s (higher is better)")
    ax.set_title("GPT-2 tiny (3.3M), micro-batch 8 x 256, 1 rank, 2 threads")
    ax.legend(loc="upper right")
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"wrote {png}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
