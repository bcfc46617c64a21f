#!/usr/bin/env python3
"""A Llama (grouped-query attention 4:2, untied head) trained under `mpirun -np K` (one CTest case
per K, K = 1..4, uneven shards included: the units' sizes are not multiples of 3):
  1. ZeRO stages 0/1/2/3 x offload, with and without checkpointing: bitwise-identical losses and
     final weights (sha256 of the consolidated fp32 master);
  2. on every rank, measured bytes equal the plan's for every memory category (activations and
     workspace included: the Llama's own exact counts) and every collective's bytes and calls;
  3. bytes sent per step recomputed here from the Llama's unit sizes (Hugging Face shapes) and the
     ring formulas, independently of the C++ plan and layout: stages 0-2 2(N-1)/N sum(P_u) 2 B;
     stage 3 (N-1)/N (3 sum(P_u) - P_final - P_embed) 2 B with an untied head — every unit is
     gathered for forward and backward and reduce-scattered once, but the final unit (which holds
     lm_head) is gathered once for the head's forward and backward, and the embeddings only for
     forward (their backward reads no parameter; GPT-2's tied head gathers them again) — plus the
     scalar all-reduces.
Usage: llama_zero_check.py K SHARDLAB MPIRUN [MPIRUN ARGS...]"""
import json
import os
import subprocess
import sys
import tempfile

from report_expect import measured_equals_predicted

K = int(sys.argv[1])
SHARDLAB = sys.argv[2]
MPIRUN = sys.argv[3:]
L, D, H, HKV, F, T, V = 2, 64, 4, 2, 96, 32, 256
MODEL = ["--arch", "llama", "--preset", "tiny-llama", "--layers", str(L), "--hidden", str(D),
         "--heads", str(H), "--kv-heads", str(HKV), "--ffn", str(F), "--seq", str(T),
         "--vocab", str(V)]
failures = []


def run(args, out):
    cmd = MPIRUN + ["-np", str(K), SHARDLAB, "train", *MODEL, "--quiet", "--out", out, *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return json.load(open(os.path.join(out, "report.json")))


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def padded(n):
    return (n + K - 1) // K * K


def expected_bytes_sent(zero, rank, steps, scalars=2):
    kv = D // H * HKV
    # embed_tokens [V, D] (V = 256: no padding); per layer two norms, q, k, v, o, gate, up, down;
    # the final unit: model.norm and lm_head.
    layer = 2 * D + D * D + 2 * kv * D + D * D + 3 * D * F
    units = [padded(V * D)] + [padded(layer)] * L + [padded(D + V * D)]
    frac = lambda n: n * (K - 1) // K
    if zero <= 2:
        per_step = sum(2 * frac(p) * 2 for p in units)
    else:
        per_step = (3 * sum(frac(p) for p in units) - frac(units[-1]) - frac(units[0])) * 2
    c = lambda r: 4 if r % K == 0 else 0
    per_scalar = (4 - c(rank)) + (4 - c(rank + 1)) if K > 1 else 0
    return steps * (per_step + scalars * per_scalar)


with tempfile.TemporaryDirectory() as tmp:
    steps = 4
    base = ["--micro-batch", "2", "--steps", str(steps), "--precision", "bf16", "--lr", "3e-3",
            "--warmup", "2", "--val-every", "0"]
    reference = None
    configs = [(z, off, ck) for z in range(4) for off in (False, True)
               for ck in (("none", "all") if z in (0, 3) else ("every:2",))]
    for zero, offload, ck in configs:
        name = f"llama-zero{zero}{'-offload' if offload else ''}-ck{ck}"
        args = base + ["--zero", str(zero), "--checkpoint", ck] + (["--offload"] if offload else [])
        rep = run(args, os.path.join(tmp, name))
        losses = [s["loss"] for s in rep["steps"]]
        sig = (losses, rep["final_params_sha256"])
        if reference is None:
            reference = (name, sig)
        check(sig == reference[1], f"{name}: losses/weights differ from {reference[0]}: "
                                   f"{losses} vs {reference[1][0]}")
        for r in rep["ranks"]:
            measured_equals_predicted(check, name, r)
            check(r["memory"]["activations"]["predicted_bytes"] is not None,
                  f"{name} rank {r['rank']}: no exact activation prediction")
            total = sum(s["bytes_sent"] for s in r["comm"].values())
            want = expected_bytes_sent(zero, r["rank"], steps)
            check(total == want, f"{name} rank {r['rank']}: {total} bytes sent, formula says {want}")
            hd = r["host_device_bytes"]
            check(hd["total"] == hd["predicted"], f"{name} rank {r['rank']}: offload copies {hd}")
        print(f"ok: {name}: loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    check(reference[1][0][-1] < reference[1][0][0], f"the Llama does not learn: {reference[1][0]}")

if failures:
    sys.exit(f"{len(failures)} failures")
print(f"llama ZeRO at N={K}: ok")
