"""Check shardlab's C++ GPT-2 against the independent float64 PyTorch reference.

Subcommands:
  grads  compare loss, logits and every parameter gradient on one batch
  train  replay a single-rank `shardlab train` run step by step — its data order, gradient
         accumulation, global-norm clipping, warmup + cosine learning rate, AdamW with weight
         decay on the 2-D weights only, and the steps it skipped (fp16 overflow) — and compare
         every step's loss

The reference always runs in float64; --precision only picks the default
tolerance for what the C++ side computed in (fp32 or bf16). Run with
/usr/bin/python3 (needs torch and numpy only).
"""

import argparse
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_gpt2 as tg  # noqa: E402
import torch_llama as tl  # noqa: E402

GRAD_TOL = {"fp32": 1e-5, "bf16": 1e-2}
# Per-step loss, relative. fp32 replays the same arithmetic up to rounding order: measured
# ~1e-8 over 30 steps, so 1e-6 still leaves room while catching any misplaced step, clip or
# learning rate (those move the loss by 1e-3 and more). bf16 / fp16 round every stored tensor
# (unit roundoff 2^-9 / 2^-11): measured ~3e-4 / ~7e-5, bounds ten times the unit roundoff.
TRAIN_TOL = {"fp32": 1e-6, "bf16": 2e-2, "fp16": 5e-3}


def load_model(path):
    """The file's family (its config's "arch"; none is GPT-2) as a float64 reference."""
    _, meta = tg.read_safetensors(path)
    if json.loads(meta.get("config", "{}")).get("arch", "gpt2") == "llama":
        return tl.Llama.from_safetensors(path, dtype=torch.float64)
    return tg.GPT2.from_safetensors(path, dtype=torch.float64)


def is_decayed(name, p):
    """shardlab decays the 2-D weights only (GPT-2's names say so; a Llama's shapes do)."""
    return tg.is_decayed(name) if name.startswith("transformer.") else p.dim() == 2


def load_model_and_batch(args):
    model = load_model(args.weights)
    need = tg.tokens_needed(args.batch, args.seq, args.start)
    tokens = tg.load_tokens(args.data, limit=need)
    x, y = tg.get_batch(tokens, args.batch, args.seq, args.start)
    return model, x, y


def rel_error(ours, ref):
    """||ours - ref|| / ||ref|| in float64 (absolute norm if ref is all zero)."""
    ours = ours.to(torch.float64)
    ref = ref.to(torch.float64)
    diff = torch.linalg.vector_norm(ours - ref).item()
    denom = torch.linalg.vector_norm(ref).item()
    return diff / denom if denom > 0 else diff


def normalize_ours_name(name):
    # Accept GPT-2 grad names with or without the "transformer." prefix (a Llama's are "model."
    # and "lm_head.").
    if name.startswith(("grad/model.", "grad/lm_head.")):
        return name
    if name.startswith("grad/") and not name.startswith("grad/transformer."):
        return "grad/transformer." + name[len("grad/"):]
    return name


def print_row(name, shape, rel, tol, ok):
    rel_s = f"{rel:.3e}" if isinstance(rel, float) else str(rel)
    print(f"{name:<48} {str(shape):<18} {rel_s:>11} {tol:>9.1e}  {'ok' if ok else 'FAIL'}")


def finish(passed, failed):
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


# ---------------------------------------------------------------- grads

def reference_grads(model, x, y):
    logits, loss = model(x, y)
    loss.backward()
    ref = {"loss": loss.detach().reshape(1), "logits": logits.detach()}
    for name, p in model.params.items():
        ref["grad/" + name] = p.grad.detach()
    return ref


def cmd_grads(args):
    tol = args.tol if args.tol is not None else GRAD_TOL[args.precision]
    model, x, y = load_model_and_batch(args)
    ref = reference_grads(model, x, y)
    raw, _ = tg.read_safetensors(args.ours)
    ours, original = {}, {}
    failed = passed = 0
    for name, t in raw.items():
        key = normalize_ours_name(name)
        if key in ours:
            print(f"{name:<48} duplicate of {original[key]}  FAIL")
            failed += 1
        ours[key], original[key] = t, name
    print(f"reference loss {ref['loss'].item():.10f}  ours {_scalar(ours.get('loss'))}")
    print(f"{'tensor':<48} {'shape':<18} {'rel':>11} {'tol':>9}")
    for name, r in ref.items():
        shape = list(r.shape)
        if name not in ours:
            print_row(name, shape, "missing", tol, False)
            failed += 1
            continue
        o = ours[name]
        if list(o.shape) != shape:
            print_row(name, shape, f"shape {list(o.shape)}", tol, False)
            failed += 1
            continue
        rel = rel_error(o, r)
        ok = math.isfinite(rel) and rel <= tol
        print_row(name, shape, rel, tol, ok)
        passed, failed = passed + ok, failed + (not ok)
    for name in sorted(set(ours) - set(ref)):
        print_row(original[name], list(ours[name].shape), "unexpected", tol, False)
        failed += 1
    return finish(passed, failed)


def _scalar(t):
    return "missing" if t is None else f"{t.to(torch.float64).reshape(-1)[0].item():.10f}"


# ---------------------------------------------------------------- train

def make_optimizer(model, args):
    decay = [p for n, p in model.params.items() if is_decayed(n, p)]
    no_decay = [p for n, p in model.params.items() if not is_decayed(n, p)]
    groups = [{"params": decay, "weight_decay": args.weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=args.lr, betas=(args.beta1, args.beta2), eps=args.eps)


def learning_rate(step, args):
    """shardlab's schedule: linear warmup from 0, then cosine or linear to min_lr_ratio * peak, or
    constant."""
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    if args.schedule == "constant" or args.steps <= args.warmup + 1:
        return args.lr
    progress = min((step - args.warmup) / (args.steps - args.warmup - 1), 1.0)
    left = 0.5 * (1 + math.cos(math.pi * progress)) if args.schedule == "cosine" else 1 - progress
    return args.lr * (args.min_lr_ratio + (1 - args.min_lr_ratio) * left)


def training_windows(args, seq):
    """`shardlab train --data FILE` on one rank: the first 90% of the tokens, cut into
    consecutive windows of seq + 1."""
    tokens = tg.load_tokens(args.data)
    n_val = int(tokens.numel() * 0.1)
    train = tokens[:tokens.numel() - n_val]
    count = train.numel() // (seq + 1)
    return train[:count * (seq + 1)].view(count, seq + 1)


def reference_losses(model, args, skipped):
    """Loss of each step (mean over its micro-batches, before the update) of the run shardlab made;
    steps in `skipped` apply no update, as shardlab skipped them."""
    seq = model.cfg["context"]
    windows = training_windows(args, seq)
    opt = make_optimizer(model, args)
    params = list(model.params.values())
    losses, clipped = [], 0
    B, A = args.micro_batch, args.grad_accum
    for step in range(args.steps):
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for a in range(A):
            first = (step * A + a) * B
            idx = [(first + b) % windows.shape[0] for b in range(B)]
            w = windows[idx]
            _, loss = model(w[:, :-1], w[:, 1:])
            (loss / A).backward()
            total += loss.item()
        losses.append(total / A)
        if step in skipped:
            continue
        norm = torch.sqrt(sum((p.grad ** 2).sum() for p in params)).item()
        if args.grad_clip > 0 and norm > args.grad_clip:
            clipped += 1
            for p in params:
                p.grad.mul_(args.grad_clip / (norm + 1e-6))
        for g in opt.param_groups:
            g["lr"] = learning_rate(step, args)
        opt.step()
    return losses, clipped


def cmd_train(args):
    tol = args.tol if args.tol is not None else TRAIN_TOL[args.precision]
    with open(args.ours) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    ours = [r["loss"] for r in rows]
    skipped = {i for i, r in enumerate(rows) if r.get("skipped")}
    model = load_model(args.weights)
    ref, clipped = reference_losses(model, args, skipped)
    print(f"reference: {len(ref)} steps, loss {ref[0]:.6f} -> {ref[-1]:.6f}; "
          f"{clipped} clipped, {len(skipped)} skipped by shardlab")
    failed = passed = 0
    if len(ours) != len(ref):
        print(f"ours has {len(ours)} losses, expected {len(ref)}  FAIL")
        failed += 1
    print(f"{'step':>6} {'ref':>16} {'ours':>16} {'rel':>11} {'tol':>9}")
    for step, r in enumerate(ref):
        if step >= len(ours):
            failed += 1
            continue
        o = float(ours[step])
        rel = abs(o - r) / abs(r) if r != 0 else abs(o - r)
        ok = math.isfinite(rel) and rel <= tol
        passed, failed = passed + ok, failed + (not ok)
        # Every 10th step and the last one, plus every failure, for a readable log.
        if step % 10 == 0 or step == len(ref) - 1 or not ok:
            print(f"{step:>6} {r:>16.10f} {o:>16.10f} {rel:>11.3e} {tol:>9.1e}  {'ok' if ok else 'FAIL'}")
    return finish(passed, failed)


# ---------------------------------------------------------------- CLI

def add_common(p):
    p.add_argument("--weights", required=True, help="model .safetensors (config in metadata)")
    p.add_argument("--data", required=True, help="llm.c uint16 shard or raw byte file")
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--seq", type=int, required=True)
    p.add_argument("--start", type=int, default=0, help="first window of the batch")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                   help="what OURS was computed in; picks the default tolerance")
    p.add_argument("--tol", type=float, default=None, help="override the tolerance")


def build_parser():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("grads", help="compare loss, logits and gradients")
    add_common(g)
    g.add_argument("--ours", required=True, help="safetensors with loss, logits, grad/<name>")
    g.set_defaults(func=cmd_grads)
    t = sub.add_parser("train", help="replay a single-rank shardlab train run")
    t.add_argument("--weights", required=True, help="the run's --init weights (.safetensors)")
    t.add_argument("--data", required=True, help="the run's --data file")
    t.add_argument("--ours", required=True, help="the run's steps.jsonl")
    t.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32",
                   help="what the run computed in; picks the default tolerance")
    t.add_argument("--tol", type=float, default=None, help="override the tolerance")
    t.add_argument("--steps", type=int, required=True)
    t.add_argument("--micro-batch", type=int, required=True)
    t.add_argument("--grad-accum", type=int, default=1)
    t.add_argument("--lr", type=float, required=True)
    t.add_argument("--warmup", type=int, default=0)
    t.add_argument("--schedule", choices=["cosine", "linear", "constant"], default="cosine")
    t.add_argument("--min-lr-ratio", type=float, default=0.1)
    t.add_argument("--grad-clip", type=float, default=1.0)
    t.add_argument("--beta1", type=float, default=0.9)
    t.add_argument("--beta2", type=float, default=0.95)
    t.add_argument("--eps", type=float, default=1e-8)
    t.add_argument("--weight-decay", type=float, default=0.1)
    t.set_defaults(func=cmd_train)
    return ap


def main(argv=None):
    args = build_parser().parse_args(argv)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
