#!/usr/bin/env python3
"""PyTorch eager peer for `shardlab bench step`: the same GPT-2 shape, batch, threads and AdamW
(foreach), written the way a PyTorch user would (nanoGPT-style nn.Linear / nn.LayerNorm, tanh
GELU, tied head); bf16 through torch.autocast. Prints one JSON object like shardlab's.
On a GPU (--device cuda) attention is F.scaled_dot_product_attention (as nanoGPT writes it there:
PyTorch picks its flash kernel), and --compile adds torch.compile.

Usage: torch_bench_step.py --layers L --hidden D --heads H --vocab V --seq T --batch B
                           --precision fp32|bf16 --threads N [--steps S] [--warmup W]
                           [--device cpu|cuda] [--compile]"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.c_fc, self.mlp_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def attn(self, x):
        B, T, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q, k, v = (t.view(B, T, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        if x.is_cuda:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).reshape(B, T, d))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).reshape(B, T, d))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, seq, layers, d, heads):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.h = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.view(-1))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    for k in ("layers", "hidden", "heads", "vocab", "seq", "batch", "threads"):
        ap.add_argument(f"--{k}", type=int, required=True)
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = GPT(a.vocab, a.seq, a.layers, a.hidden, a.heads).to(a.device)
    step_model = torch.compile(model) if a.compile else model
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    rest = [p for n, p in model.named_parameters() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=1e-4, betas=(0.9, 0.95), eps=1e-8, foreach=True)
    idx = torch.randint(0, a.vocab, (a.batch, a.seq), device=a.device)
    tgt = torch.randint(0, a.vocab, (a.batch, a.seq), device=a.device)
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
    times = []
    for s in range(a.warmup + a.steps):
        sync()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(a.device, dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            loss = step_model(idx, tgt)
        loss.backward()
        opt.step()
        sync()
        if s >= a.warmup:
            times.append(time.perf_counter() - t0)
    median = sorted(times)[len(times) // 2]
    peer = f"pytorch {torch.__version__} {'torch.compile' if a.compile else 'eager'}"
    print(json.dumps({"peer": peer, "device": a.device, "precision": a.precision,
                      "threads": a.threads, "ms_per_step": median * 1e3,
                      "tokens_per_s": a.batch * a.seq / median}))


if __name__ == "__main__":
    main()
