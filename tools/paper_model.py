#!/usr/bin/env python3
"""One GPT-2 training step on paper: every op the engine runs for one step on one GPU (ZeRO-0, no
accumulation: the lease's `bench step` and `--trace` runs), with the shapes model/gpt2/gpt_model.cpp gives
it, each op's FLOPs and bytes (tools/roofline.py), its roofline and expected time on a named GPU, and
the step's expected time, tokens/s and MFU — so the first GPU run is checked kernel by kernel against
an expectation (docs/GPU.md "the paper model"; tools/trace_ops.py --paper puts the same per-op
expectation beside a measured trace). `--check-trace FILE` instead compares the op list with one
traced step of a run of the same shape: same ops, same shapes, same counts, or it says which differ
(CTest paper_model_matches_trace, so the paper follows the code).

Usage: paper_model.py [--preset gpt2|tiny] [--batch B] [--seq T] [--precision bf16|fp16|fp32]
                      [--vocab V] [--vocab-multiple M] [--attention flash|materialize] [--gpu h100]
                      [--layers L --hidden C --heads H] [--check-trace TRACE.json]"""
import argparse
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import roofline  # noqa: E402

PRESETS = {"gpt2": (12, 768, 12, 50257, 1024), "tiny": (4, 256, 4, 256, 256)}


def shape(dims, dt, transposed=False):
    return f"[{', '.join(str(d) for d in dims)}] {dt}" + (" T" if transposed else "")


def update_sizes(L, C, V, Vp, ctx):
    """The sizes of the AdamW tensors (one per stretch of neighbouring tensors with the same weight
    decay: optim/updater.h) and of every unit's gradient (one fill each, zeroed after the update):
    embeddings (wte, wpe), L blocks, the final norm. wte's padding rows (V .. Vp) are stored in its
    unit but belong to no tensor, so wpe's tensor is its own when V < Vp."""
    # ln_1 w b | attn w | attn b | proj w | proj b, ln_2 w b | fc w | fc b | mproj w | mproj b
    block = [2 * C, 3 * C * C, 3 * C, C * C, 3 * C, 4 * C * C, 4 * C, 4 * C * C, C]
    embeddings = [V * C, ctx * C] if Vp > V else [(V + ctx) * C]
    tensors = embeddings + block * L + [2 * C]
    units = [Vp * C + ctx * C] + [sum(block)] * L + [2 * C]
    return tensors, units


def step_ops(L, C, H, V, Vp, ctx, B, T, dt, attention):
    """[(name, args)] of one step, in the order the compute stream runs them."""
    N, ops = B * T, []

    def op(name, **args):
        ops.append((name, args))

    def linear(k, n):  # out [N, n] = in [N, k] @ W [k, n] + b
        op("gemm", a=shape([N, k], dt), b=shape([k, n], dt), c=shape([N, n], dt))

    def param_grads(k, n):  # dW += in^T dout; db += colsum(dout) (cuBLASLt: one GEMM, BGRADA)
        op("linear_param_grads", a=shape([N, k], dt, True), b=shape([N, n], dt), c=shape([k, n], dt))

    def linear_backward(k, n):  # din = dout W^T; then the parameter gradients
        op("gemm", a=shape([N, n], dt), b=shape([k, n], dt, True), c=shape([N, k], dt))
        param_grads(k, n)

    flash = attention == "flash"
    att_fwd = "flash_attention_forward" if flash else "attention_forward"
    att_bwd = "flash_attention_backward" if flash else "attention_backward"
    kv = {"kv_heads": H} if flash else {}  # flash is grouped-query; GPT-2 passes kv_heads = heads
    op("embedding_forward", out=shape([B, T, C], dt))
    for _ in range(L):
        op("layernorm_forward", **{"in": shape([N, C], dt)})
        linear(C, 3 * C)
        op(att_fwd, qkv=shape([B, T, 3 * C], dt), heads=H, **kv)
        linear(C, C)
        op("residual_layernorm_forward", x=shape([N, C], dt))
        # fc and its GELU: one GEMM with cuBLASLt's GELU_AUX_BIAS epilogue (pre-GELU kept as aux)
        op("linear_gelu_forward", a=shape([N, C], dt), b=shape([C, 4 * C], dt), c=shape([N, 4 * C], dt))
        linear(4 * C, C)
        op("accumulate", dst=shape([N, C], dt))
    op("layernorm_forward", **{"in": shape([N, C], dt)})
    # The head's GEMMs see the padded vocabulary; the loss only its first V columns.
    op("gemm", a=shape([N, C], dt), b=shape([Vp, C], dt, True), c=shape([N, Vp], dt))
    op("cross_entropy", logits=shape([N, Vp], dt), vocab=V, backward=True)
    op("fill", dst=shape([N, C], dt))
    op("gemm", a=shape([N, Vp], dt), b=shape([Vp, C], dt), c=shape([N, C], dt))
    op("gemm", a=shape([N, Vp], dt, True), b=shape([N, C], dt), c=shape([Vp, C], dt))
    op("layernorm_backward", dout=shape([N, C], dt))
    for _ in range(L):
        # mproj's input gradient, then the GELU's backward and fc's bias gradient in one kernel
        # of ours (cuBLASLt's DGELU_BGRAD was slower on the H200: docs/BENCHMARKS.md)
        op("linear_gelu_backward", a=shape([N, C], dt), b=shape([4 * C, C], dt, True),
           c=shape([N, 4 * C], dt))
        param_grads(4 * C, C)
        op("gemm", a=shape([N, 4 * C], dt), b=shape([C, 4 * C], dt, True), c=shape([N, C], dt))
        op("gemm", a=shape([N, C], dt, True), b=shape([N, 4 * C], dt), c=shape([C, 4 * C], dt))
        op("layernorm_backward", dout=shape([N, C], dt))
        linear_backward(C, C)
        op(att_bwd, qkv=shape([B, T, 3 * C], dt), heads=H, **kv)
        linear_backward(C, 3 * C)
        op("layernorm_backward", dout=shape([N, C], dt))
    op("embedding_backward", dout=shape([B, T, C], dt))
    tensors, units = update_sizes(L, C, V, Vp, ctx)
    op("squared_norm", parts=len(units))
    # one call for the whole update, its tensors as one fp32 master (optim/device_updater.cpp)
    op("adamw", tensors=len(tensors), master=shape([sum(tensors)], "fp32"))
    for n in units:
        op("fill", dst=shape([n], dt))
    return ops


def key(name, args):
    return name + " " + json.dumps(args, sort_keys=True)


def check_trace(ops, trace, rank=0):
    """Differences between the paper's op list and the first traced step's, as text lines."""
    events = json.load(open(trace))["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X" and e.get("pid") == rank]
    step = next(e for e in spans if e["cat"] == "step" and e["name"].startswith("step "))
    lo, hi = step["ts"], step["ts"] + step["dur"]
    traced = [(e["name"], e.get("args", {})) for e in spans if e["cat"] == "op" and lo <= e["ts"] < hi]
    want = collections.Counter(key(*o) for o in ops)
    got = collections.Counter(key(*o) for o in traced)
    lines = [f"paper has {n}x, trace {got[k]}x: {k}" for k, n in sorted(want.items()) if got[k] != n]
    lines += [f"paper has 0x, trace {n}x: {k}" for k, n in sorted(got.items()) if k not in want]
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="gpt2", choices=sorted(PRESETS))
    ap.add_argument("--layers", type=int)
    ap.add_argument("--hidden", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--vocab", type=int)
    ap.add_argument("--vocab-multiple", type=int, default=128,
                    help="V padded to a multiple of this in the head's GEMMs, as train's flag (1: none)")
    ap.add_argument("--context", type=int)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int)
    ap.add_argument("--precision", default="bf16", choices=["bf16", "fp16", "fp32"])
    ap.add_argument("--attention", default="flash", choices=["flash", "materialize"])
    ap.add_argument("--gpu", default="h100", choices=sorted(roofline.GPUS))
    ap.add_argument("--check-trace")
    a = ap.parse_args()
    L, C, H, V, ctx = PRESETS[a.preset]
    L, C, H, V = a.layers or L, a.hidden or C, a.heads or H, a.vocab or V
    ctx = a.context or ctx
    T = a.seq or ctx
    Vg = -(-V // a.vocab_multiple) * a.vocab_multiple
    ops = step_ops(L, C, H, V, Vg, ctx, a.batch, T, a.precision, a.attention)
    if a.check_trace:
        diff = check_trace(ops, a.check_trace)
        print("\n".join(diff) if diff else f"the trace's step runs the paper's {len(ops)} ops")
        return 1 if diff else 0
    print(table(ops, L, C, V, Vg, a.batch, T, a.gpu, a.precision, a.attention))
    return 0


def table(ops, L, C, V, Vg, B, T, gpu, precision, attention):
    per = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0, 0.0])
    for name, args in ops:
        c = roofline.cost(name, args)
        if c is None:
            continue
        p = per[name]
        p[0] += 1
        p[1] += c[0]
        p[2] += c[1]
        p[3] += roofline.seconds(c, gpu, roofline_only=True)
        p[4] += roofline.seconds(c, gpu, launches=roofline.launches(name, args))
    step_s = sum(p[4] for p in per.values())
    roof_s = sum(p[3] for p in per.values())
    # Model FLOPs as `shardlab bench step` counts them (6 per matmul weight and token, causal
    # attention 6 * L * T * C per token), over the true vocabulary: the MFU convention.
    model_flops = B * T * (6.0 * (L * 12.0 * C * C + V * C) + 6.0 * L * T * C)
    fp32 = precision == "fp32"  # its ops take the "_fp32" kinds, and MFU the fp32 peak
    peak = roofline.GPUS[gpu]["fp32" if fp32 else "tensor"]
    padded = f" (GEMMs at {Vg})" if Vg != V else ""
    lines = [f"GPT-2 L={L} C={C} V={V}{padded}, {B}x{T} tokens, {precision}, {attention} attention, "
             f"{roofline.GPUS[gpu]['name']}: one step, one GPU, ZeRO-0",
             "", "| op | calls | GFLOP | GB moved | roofline ms | expected ms | share |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, (n, fl, by, rs, es) in sorted(per.items(), key=lambda kv: -kv[1][4]):
        lines.append(f"| {name} | {n} | {fl / 1e9:,.1f} | {by / 1e9:.3f} | {rs * 1e3:.3f} | "
                     f"{es * 1e3:.3f} | {es / step_s:.1%} |")
    eff = {k: e for k, e in roofline.EFFICIENCY.items() if k == "memory" or k.endswith("_fp32") == fp32}
    lines += ["", f"roofline (every op at peak, no launch cost): {roof_s * 1e3:.1f} ms",
              f"expected step: {step_s * 1e3:.1f} ms, {B * T / step_s:,.0f} tokens/s, "
              f"{model_flops / step_s / peak:.1%} MFU (model FLOPs {model_flops / 1e12:.2f} T; "
              f"efficiencies {eff}, {roofline.LAUNCH_S * 1e6:g} us per launch)"]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
