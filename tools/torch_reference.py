"""Check shardlab's C++ GPT-2 against the independent float64 PyTorch reference.

Subcommands:
  grads  compare loss, logits and every parameter gradient on one batch
  train  compare the loss curve of S AdamW steps on one fixed batch

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

GRAD_TOL = {"fp32": 1e-5, "bf16": 1e-2}
TRAIN_TOL = {"fp32": 1e-4, "bf16": 3e-2}


def load_model_and_batch(args):
    model = tg.GPT2.from_safetensors(args.weights, dtype=torch.float64)
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
    # Accept grad names with or without the "transformer." prefix.
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
    decay = [p for n, p in model.params.items() if tg.is_decayed(n)]
    no_decay = [p for n, p in model.params.items() if not tg.is_decayed(n)]
    groups = [{"params": decay, "weight_decay": args.weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=args.lr, betas=(args.beta1, args.beta2), eps=args.eps)


def reference_losses(model, x, y, args):
    """Loss before each of S updates on the same batch (constant lr, no clip)."""
    opt = make_optimizer(model, args)
    losses = []
    for _ in range(args.steps):
        opt.zero_grad(set_to_none=True)
        _, loss = model(x, y)
        losses.append(loss.item())
        loss.backward()
        opt.step()
    return losses


def cmd_train(args):
    tol = args.tol if args.tol is not None else TRAIN_TOL[args.precision]
    with open(args.ours) as f:
        ours = json.load(f)["losses"]
    model, x, y = load_model_and_batch(args)
    ref = reference_losses(model, x, y, args)
    print(f"reference loss: first {ref[0]:.10f}  last {ref[-1]:.10f}")
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
    t = sub.add_parser("train", help="compare a full-batch AdamW loss curve")
    add_common(t)
    t.add_argument("--steps", type=int, required=True)
    t.add_argument("--lr", type=float, required=True)
    t.add_argument("--beta1", type=float, default=0.9)
    t.add_argument("--beta2", type=float, default=0.999)
    t.add_argument("--eps", type=float, default=1e-8)
    t.add_argument("--weight-decay", type=float, default=0.0)
    t.add_argument("--ours", required=True, help='JSON {"losses": [...]}')
    t.set_defaults(func=cmd_train)
    return ap


def main(argv=None):
    args = build_parser().parse_args(argv)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
