#!/usr/bin/env python3
"""PyTorch peer for `shardlab bench adamw`: torch.optim.AdamW (foreach) updating N fp32
parameters on the CPU, split into 100 tensors as a model's would be. Prints one JSON object.
Usage: torch_bench_adamw.py --params N --threads T [--iters K]"""
import argparse
import json
import time

import torch


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", type=float, default=100e6)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    n, pieces = int(a.params), 100
    params = [torch.full((n // pieces,), 0.5, requires_grad=True) for _ in range(pieces)]
    for p in params:
        p.grad = torch.full_like(p, 1e-3)
    opt = torch.optim.AdamW(params, lr=6e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, foreach=True)
    opt.step()  # allocate the state, warm up
    times = []
    for _ in range(a.iters):
        t0 = time.perf_counter()
        opt.step()
        times.append(time.perf_counter() - t0)
    median = sorted(times)[len(times) // 2]
    print(json.dumps({"peer": f"torch.optim.AdamW(foreach=True) {torch.__version__}", "params": n,
                      "threads": a.threads, "seconds_per_step": median, "params_per_s": n / median}))


if __name__ == "__main__":
    main()
