"""The roofline of one op: its floating-point work and the bytes it must move through device memory
at least once, read from the op's name and the shapes a `--trace` span records (model/traced_ops.cpp
writes them: "[4096, 768] bf16 T"), and the time that takes on a named GPU. Shared by
tools/paper_model.py (a whole step on paper) and tools/trace_ops.py --paper GPU (beside the measured
per-op table). Figures are datasheet peaks, cited in GPUS; the efficiencies that turn a roofline
into an expectation are assumptions, named in EFFICIENCY and derived in docs/GPU.md."""
import math
import re

# Dense tensor-core bf16/fp16 rate, fp32 CUDA-core rate (FLOP/s), HBM bandwidth (B/s).
# NVIDIA H100 SXM5 datasheet: 989.4 TFLOP/s bf16 dense, 66.9 fp32, 3.35 TB/s HBM3.
# H200 SXM: the same SMs, 4.8 TB/s HBM3e. A100 SXM4 80GB: 312 bf16, 19.5 fp32, 2.039 TB/s.
GPUS = {
    "h100": {"name": "H100 SXM5", "tensor": 989.4e12, "fp32": 66.9e12, "hbm": 3.35e12},
    "h200": {"name": "H200 SXM", "tensor": 989.4e12, "fp32": 66.9e12, "hbm": 4.8e12},
    "a100": {"name": "A100 SXM4 80GB", "tensor": 312e12, "fp32": 19.5e12, "hbm": 2.039e12},
}

# Fractions of the peak a well-written kernel of each kind reaches on these shapes (assumptions,
# docs/GPU.md "the paper model"): cuBLAS GEMMs of GPT-2 124M's sizes ~65% of the tensor peak
# (llm.c's measured GEMM rates on H100); a FlashAttention-2-style kernel without Hopper's TMA and
# wgmma ~30% (FA2 reports 35-40% on H100 forward, less backward); memory-bound kernels ~80% of HBM.
# Every launch costs at least LAUNCH_S (back-to-back kernels on one stream).
# A GEMM with a dimension that is not a multiple of 8 (GPT-2's V = 50257) cannot use the 16-byte
# aligned tensor-core paths: ~40% (the reason for vocabulary padding, issue 24).
# fp32 operands run on the CUDA cores at the fp32 rate (the GEMMs compute in 32F without TF32,
# model/kernels/cuda/gemm.cu; flash attention's fp32 path has no tensor-core kernel): "_fp32" kinds,
# assumed at the same fractions of that peak.
EFFICIENCY = {"gemm": 0.65, "gemm_unaligned": 0.40, "attention": 0.30, "memory": 0.80,
              "gemm_fp32": 0.65, "attention_fp32": 0.30}
LAUNCH_S = 2.5e-6

SIZES = {"fp32": 4, "bf16": 2, "fp16": 2, "f64": 8}


def parse(text):
    """'[4096, 768] bf16 T' -> ([4096, 768], 2, True)."""
    m = re.fullmatch(r"\[([0-9, ]*)\] (\w+)( T)?", text.strip())
    if not m:
        raise ValueError(f"roofline: cannot read the shape {text!r}")
    dims = [int(x) for x in m.group(1).split(",") if x.strip()]
    return dims, SIZES[m.group(2)], bool(m.group(3))


def numel(dims):
    return math.prod(dims)


def gemm_cost(args):
    a, es, ta = parse(args["a"])
    b, _, tb = parse(args["b"])
    c, _, _ = parse(args["c"])
    batch = numel(c[:-2])
    m, n = c[-2], c[-1]
    k = a[-2] if ta else a[-1]
    flops = 2.0 * batch * m * n * k
    # A and B read once, C written once (read too when accumulating: dW += ..., not in the span).
    bytes_ = es * (numel(a) + numel(b) + numel(c))
    if es == 4:
        return flops, bytes_, "gemm_fp32"
    return flops, bytes_, "gemm" if m % 8 == 0 and n % 8 == 0 and k % 8 == 0 else "gemm_unaligned"


def attention_cost(name, args):
    (B, T, C3), es, _ = parse(args["qkv"])
    # Flash is grouped-query: qkv rows [q: H hd | k: Hkv hd | v: Hkv hd] (Hkv = H: [3C]).
    H = int(args["heads"])
    Hkv = int(args.get("kv_heads", H))
    C = C3 // (H + 2 * Hkv) * H
    hd = C // H
    causal = B * H * (T * (T + 1) / 2) * hd  # multiply-adds of one T x T x hd product, causal
    rows = B * T * C * es
    qkv = B * T * C3 * es  # 3 rows when Hkv = H
    flash, gemm = ("attention_fp32", "gemm_fp32") if es == 4 else ("attention", "gemm")
    if name == "flash_attention_forward":  # S = QK^T, O = PV over the lower triangle
        return 2 * 2 * causal, qkv + rows + 4 * B * H * T, flash
    if name == "flash_attention_backward":
        # dK,dV pass: S, dP, dV, dK; dQ pass: S, dP, dQ: 7 products (recomputing, no atomics).
        return 7 * 2 * causal, qkv + 3 * rows + 4 * B * H * T + qkv, flash
    full = B * H * T * T * hd  # the materialising path: cuBLAS computes every tile
    probs = B * H * T * T
    if name == "attention_forward":  # scores fp32 written and read, P written and read
        return 2 * 2 * full, 3 * rows + probs * (4 + 4 + es + es) + rows, gemm
    # backward: dP fp32 written/read, dS written/read twice, P read twice
    return 4 * 2 * full, 3 * rows + probs * (4 + 4 + 4 * es + 2 * es) + 3 * rows, gemm


def elementwise_cost(name, args):
    """(flops, bytes): what each row/element kernel reads and writes once."""
    key = next((k for k in ("in", "x", "dout", "dst", "out", "logits", "master", "src")
                if k in args), None)
    if key is None:
        raise KeyError(name)  # squared_norm: its spans name only how many parts
    dims, es, _ = parse(args[key])
    n = numel(dims)
    rows = n // dims[-1] if dims else 1
    table = {
        "layernorm_forward": (8 * n, 2 * n * es + 8 * rows),
        "residual_layernorm_forward": (9 * n, 4 * n * es + 8 * rows),
        "layernorm_backward": (12 * n, 4 * n * es + 8 * rows),
        "gelu_forward": (12 * n, 2 * n * es),
        "gelu_backward": (16 * n, 3 * n * es),
        "accumulate": (n, 3 * n * es),
        "fill": (0, n * es),
        "bias_grad": (n, n * es),
        "embedding_forward": (n, 3 * n * es),
        "embedding_backward": (n, 3 * n * es),
        "cross_entropy": (6 * n, (2 if args.get("backward") else 1) * n * es),
        # master, m, v read and written (fp32), the gradient read, the 16-bit copy written
        "adamw": (12 * n, n * (24 + 2 + 2)),
    }
    if name == "convert":
        _, es_dst, _ = parse(args["dst"])
        return 0, n * (es + es_dst)
    if name not in table:
        raise KeyError(name)
    return table[name]


def cost(name, args):
    """(flops, bytes, kind) of one call, or None for an op with no shapes to read (squared_norm)."""
    if name in ("gemm", "linear_param_grads"):  # the bias gradient rides on the GEMM's reads
        return gemm_cost(args)
    if name == "linear_gelu_forward":  # GELU_AUX_BIAS: + the pre-GELU aux, C's size
        flops, bytes_, kind = gemm_cost(args)
        c, es, _ = parse(args["c"])
        return flops, bytes_ + numel(c) * es, kind
    if name == "linear_gelu_backward":  # the GEMM, then the GELU backward with the bias gradient
        flops, bytes_, kind = gemm_cost(args)  # in the same pass over C (gelu.cu)
        f, b = elementwise_cost("gelu_backward", {"dout": args["c"]})
        return flops + f + elementwise_cost("bias_grad", {"dout": args["c"]})[0], bytes_ + b, kind
    if "attention" in name:
        return attention_cost(name, args)
    try:
        flops, bytes_ = elementwise_cost(name, args)
    except KeyError:
        return None
    return flops, bytes_, "memory"


def launches(name, args):
    """The kernel launches of one call: AdamW's tensors go 32 to a launch (model/kernels/cuda/
    adamw.cu); every other op is priced as one."""
    if name == "adamw" and "tensors" in args:
        return max(1, -(-int(args["tensors"]) // 32))
    return 1


def seconds(c, gpu, roofline_only=False, launches=1):
    """The op's time on `gpu`: the roofline (max of compute and memory time at peak), or the
    expectation (each at its kind's efficiency, plus its launches)."""
    flops, bytes_, kind = c
    g = GPUS[gpu]
    rate = g["fp32"] if kind == "memory" or kind.endswith("_fp32") else g["tensor"]
    if roofline_only:
        return max(flops / rate, bytes_ / g["hbm"])
    eff = EFFICIENCY[kind]
    mem_eff = EFFICIENCY["memory"]
    return max(flops / (rate * eff), bytes_ / (g["hbm"] * mem_eff)) + launches * LAUNCH_S
