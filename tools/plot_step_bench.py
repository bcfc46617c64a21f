#!/usr/bin/env python3
"""Training tokens/s, shardlab against PyTorch eager, from the JSON lines that
bench/model_step_vs_torch.sh writes (`bench step --peer pytorch --json`): one panel per model,
fp32 and bf16 side by side, each shardlab bar labelled with its ratio to PyTorch.
Usage: plot_step_bench.py RESULTS.jsonl OUT.png"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

TITLES = {"tiny": "tiny (3.3M), 8 x 256", "gpt2": "GPT-2 124M, 4 x 256"}


def main(path, png):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    rows = [r for r in rows if "ratio" in r]
    models = [m for m in TITLES if any(r["model"] == m for r in rows)]
    fig, axes = plt.subplots(1, len(models), figsize=(5 * len(models), 4.2), squeeze=False)
    width = 0.38
    for ax, model in zip(axes[0], models):
        mine = [r for r in rows if r["model"] == model]
        xs = range(len(mine))
        ours = ax.bar([x - width / 2 for x in xs], [r["tokens_per_s"] for r in mine], width,
                      label="shardlab")
        peer = ax.bar([x + width / 2 for x in xs], [r["peer_tokens_per_s"] for r in mine], width,
                      label=mine[0]["peer"])
        ax.bar_label(ours, labels=[f"{r['tokens_per_s']:.0f}\n{r['ratio']:.1f}x" for r in mine])
        ax.bar_label(peer, fmt="%.0f")
        ax.set_xticks(list(xs), [r["precision"] for r in mine])
        ax.set_ylim(0, max(r["tokens_per_s"] for r in mine) * 1.35)
        ax.set_title(TITLES[model])
        ax.set_ylabel("training tokens / s (higher is better)")
        ax.legend(loc="upper right", fontsize=8)
    cpu = rows[0].get("cpu", "")
    fig.suptitle(f"1 rank x 2 threads, one step = forward + backward + AdamW  ({cpu})", fontsize=9)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"wrote {png}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
