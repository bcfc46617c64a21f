#!/usr/bin/env python3
"""PyTorch peer for `shardlab bench attention --device cuda`: causal
torch.nn.functional.scaled_dot_product_attention on the same B x T x H x hd, forward and backward
timed apart on CUDA events (5 passes back to back per sample, best of 2 rounds of the median of
--iters samples after a warm-up), as the shardlab command times its passes. q, k and v are views
of one [B, T, 3, H, hd] tensor (the layout of a fused qkv projection, shardlab's), so SDPA sees
what a GPT-2 block hands it; backward is torch.autograd.grad to q, k and v, which stops at the
views (a backward to the fused tensor would add autograd's scatter of three gradients, work
shardlab's kernels do not do). Its FLOP
count is shardlab's: forward 4 hd per visible query-key pair, backward 2.5 times that. Prints one
JSON object; `sdpa_backend` says which kernels PyTorch allowed (flash where it can). On the CPU
(for trying it out; torch 1.13 has only `_scaled_dot_product_attention`) the wall clock times it.
Usage: torch_bench_attention.py [--device cuda] --batch B --seq T --heads H --head-dim D
                                [--precision bf16|fp16|fp32] [--iters K]"""
import argparse
import json
import time

import torch
import torch.nn.functional as F


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--precision", default="bf16", choices=["bf16", "fp16", "fp32"])
    ap.add_argument("--iters", type=int, default=5)
    a = ap.parse_args()
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[a.precision]
    dev = torch.device(a.device)
    torch.manual_seed(1)
    B, T, H, D = a.batch, a.seq, a.heads, a.head_dim
    qkv = (torch.rand(B, T, 3, H, D, device=dev) * 2 - 1).to(dtype).requires_grad_(True)
    dout = (torch.rand(B, H, T, D, device=dev) * 2 - 1).to(dtype)
    cuda = dev.type == "cuda"

    q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))

    def forward():
        if hasattr(F, "scaled_dot_product_attention"):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        # torch 1.13 (Debian 12's, CPU only): (q, k, v, attn_mask, dropout_p, need_attn_weights,
        # is_causal); it materialises the probabilities
        return F._scaled_dot_product_attention(q, k, v, None, 0.0, False, True)[0]

    passes = 5  # per sample, back to back: the first one's launch latency is spread over them

    def timed(run):  # seconds of one run: CUDA events on a GPU, the wall clock elsewhere
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(passes):
                run()
            end.record()
            torch.cuda.synchronize()
            return start.elapsed_time(end) / 1e3 / passes
        t0 = time.perf_counter()
        for _ in range(passes):
            run()
        return (time.perf_counter() - t0) / passes

    def median(run):
        samples = [timed(run) for _ in range(a.iters + 1)][1:]  # the first is a warm-up
        return sorted(samples)[len(samples) // 2]

    def backward_of(out):  # backward alone, over one retained graph, to q, k and v
        return lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)

    best_f, best_b = float("inf"), float("inf")
    for _ in range(2):
        best_f = min(best_f, median(forward))
        best_b = min(best_b, median(backward_of(forward())))
    pairs = T * (T + 1) / 2
    fwd = 4.0 * B * H * pairs * D
    backend = "cpu"
    if cuda:
        allowed = [n for n, on in (("flash", torch.backends.cuda.flash_sdp_enabled()),
                                   ("mem_efficient", torch.backends.cuda.mem_efficient_sdp_enabled()),
                                   ("math", torch.backends.cuda.math_sdp_enabled())) if on]
        backend = "/".join(allowed)
    fused = "scaled_dot_product_attention" if hasattr(F, "scaled_dot_product_attention") \
        else "_scaled_dot_product_attention"
    print(json.dumps({"peer": f"torch {torch.__version__} {fused}",
                      "device": a.device, "gpu": torch.cuda.get_device_name() if cuda else "",
                      "sdpa_backend": backend, "batch": B, "seq": T, "heads": H, "head_dim": D,
                      "precision": a.precision,
                      "forward_ms": best_f * 1e3, "backward_ms": best_b * 1e3,
                      "ms": (best_f + best_b) * 1e3,
                      "forward_tflops": fwd / best_f / 1e12,
                      "backward_tflops": 2.5 * fwd / best_b / 1e12}))


if __name__ == "__main__":
    main()
