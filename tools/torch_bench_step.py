#!/usr/bin/env python3
"""PyTorch eager peer for `shardlab bench step`: the same GPT-2 shape, batch, threads and AdamW
(foreach; fused on a GPU, as nanoGPT), written the way a PyTorch user would (nanoGPT-style
nn.Linear / nn.LayerNorm, tanh GELU, tied head) — or with --arch llama the same Llama as Hugging Face's modules compute it (RMSNorm,
RoPE, repeat_kv, SwiGLU, no biases); bf16 through torch.autocast. Prints one JSON object like shardlab's.
On a GPU (--device cuda) attention is F.scaled_dot_product_attention (as nanoGPT writes it there:
PyTorch picks its flash kernel), and --compile adds torch.compile.
On the CPU PyTorch's fp32 products go to the BLAS it was built with (Debian's: OpenBLAS): that
library runs on --threads threads too (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, set before torch
loads), and with the kernel OpenBLAS picks for this CPU: an inherited OPENBLAS_CORETYPE, which may
force an older kernel (Haswell's AVX2 on an AVX-512 machine: half the rate), is dropped and the
JSON says so. --vocab is the rows of the embedding and head as run (`bench step` passes its
padded V, as nanoGPT pads 50257 to 50304).

Usage: torch_bench_step.py --layers L --hidden D --heads H --vocab V --seq T --batch B
                           --precision fp32|bf16 --threads N [--steps S] [--warmup W]
                           [--device cpu|cuda] [--compile]"""
import argparse
import ctypes
import inspect
import json
import math
import os
import time


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__)
    for k in ("layers", "hidden", "heads", "vocab", "seq", "batch", "threads"):
        ap.add_argument(f"--{k}", type=int, required=True)
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--arch", choices=["gpt2", "llama"], default="gpt2")
    ap.add_argument("--kv-heads", type=int, default=0, help="llama: key/value heads")
    ap.add_argument("--ffn", type=int, default=0, help="llama: the MLP's width")
    ap.add_argument("--rope-theta", type=float, default=10000.0)
    ap.add_argument("--rms-eps", type=float, default=1e-5)
    ap.add_argument("--tied", action="store_true", help="llama: the head is the embedding")
    a = ap.parse_args()
    if a.threads < 1:
        ap.error(f"--threads {a.threads}: give the CPU threads PyTorch may use (>= 1)")
    return a


# Before torch loads: its BLAS reads these once, when it is loaded.
ARGS = parse_args() if __name__ == "__main__" else None
DROPPED_CORETYPE = None
if ARGS is not None:
    os.environ["OMP_NUM_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.threads)
    DROPPED_CORETYPE = os.environ.pop("OPENBLAS_CORETYPE", None)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def blas_info():
    """The BLAS PyTorch's CPU products run on, as loaded in this process (OpenBLAS: its kernel and
    thread count; None where torch was built with another)."""
    try:
        lib = ctypes.CDLL("libblas.so.3")
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return {"library": "openblas", "core": lib.openblas_get_corename().decode(),
                "threads": lib.openblas_get_num_threads(),
                "dropped_openblas_coretype": DROPPED_CORETYPE}
    except (OSError, AttributeError):
        return None


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


class RMSNorm(nn.Module):
    """Hugging Face's LlamaRMSNorm (torch 1.13 has no nn.RMSNorm)."""

    def __init__(self, d, eps):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class LlamaBlock(nn.Module):
    """A decoder layer as Hugging Face's LlamaDecoderLayer computes it: RMSNorm, q/k/v without
    bias, rotary positions (rotate-half), repeat_kv for grouped-query attention, o_proj, RMSNorm,
    down(silu(gate) * up)."""

    def __init__(self, d, heads, kv_heads, ffn, eps):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(d, eps), RMSNorm(d, eps)
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)
        self.gate_proj = nn.Linear(d, ffn, bias=False)
        self.up_proj = nn.Linear(d, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, d, bias=False)

    def attn(self, x, cos, sin):
        B, T, d = x.shape
        q = self.q_proj(x).view(B, T, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv_heads, self.hd).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(self.heads // self.kv_heads, dim=1)
        v = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
        if x.is_cuda:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) / math.sqrt(self.hd)
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            y = att.masked_fill(mask, float("-inf")).softmax(dim=-1) @ v
        return self.o_proj(y.transpose(1, 2).reshape(B, T, d))

    def forward(self, x, cos, sin):
        x = x + self.attn(self.input_layernorm(x), cos, sin)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Llama(nn.Module):
    def __init__(self, vocab, layers, d, heads, kv_heads, ffn, theta, eps, tied):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(LlamaBlock(d, heads, kv_heads, ffn, eps) for _ in range(layers))
        self.norm = RMSNorm(d, eps)
        self.lm_head = None if tied else nn.Linear(d, vocab, bias=False)
        self.hd, self.theta = d // heads, theta

    def forward(self, idx, targets):
        T = idx.shape[1]
        inv = 1.0 / (self.theta ** (torch.arange(0, self.hd, 2, device=idx.device).float() / self.hd))
        freqs = torch.outer(torch.arange(T, device=idx.device).float(), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        x = self.embed_tokens(idx)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        x = self.norm(x)
        logits = self.lm_head(x) if self.lm_head is not None else x @ self.embed_tokens.weight.t()
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.view(-1))


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
    a = ARGS
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    if a.arch == "llama":
        model = Llama(a.vocab, a.layers, a.hidden, a.heads, a.kv_heads or a.heads, a.ffn,
                      a.rope_theta, a.rms_eps, a.tied).to(a.device)
    else:
        model = GPT(a.vocab, a.seq, a.layers, a.hidden, a.heads).to(a.device)
    step_model = torch.compile(model) if a.compile else model
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    rest = [p for n, p in model.named_parameters() if p.dim() != 2]
    # nanoGPT's choice: one fused kernel on a GPU where this torch has it (2.0+), else foreach.
    fused = a.device == "cuda" and "fused" in inspect.signature(torch.optim.AdamW).parameters
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=1e-4, betas=(0.9, 0.95), eps=1e-8,
                            **({"fused": True} if fused else {"foreach": True}))
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
                      "threads": a.threads, "vocab": a.vocab,
                      "adamw": "fused" if fused else "foreach",
                      "blas": blas_info() if a.device == "cpu" else None,
                      "ms_per_step": median * 1e3, "tokens_per_s": a.batch * a.seq / median}))


if __name__ == "__main__":
    main()
