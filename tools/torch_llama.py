"""Independent PyTorch Llama reference (issue 25), the yardstick the C++ Llama model will be held to.

Written from Hugging Face transformers' LlamaForCausalLM definition (its parameter names and its
arithmetic: LlamaRMSNorm, LlamaRotaryEmbedding with apply_rotary_pos_emb / rotate_half, repeat_kv
for grouped-query attention, the SwiGLU MLP down(silu(gate(x)) * up(x)), no biases, a tied or
untied lm_head), not from the C++ sources, so that agreement between the two is evidence.

    Llama(cfg, params).forward(idx, targets) -> (logits, loss)

cfg: vocab, layers, hidden, heads, kv_heads, ffn, rope_theta, rms_eps, tied, and optionally
rope_scaling (Llama 3.1/3.2's "llama3" frequencies, transformers' names). Any float dtype;
float64 is the reference. Safetensors in and out come from tools/torch_gpt2.py's reader/writer.

`python3 tools/torch_llama.py selftest` checks the reference against itself where an independent
fact is known: autograd's gradients against finite differences (torch.autograd.gradcheck, float64),
grouped-query attention with kv_heads == heads equal to plain multi-head attention, causality
(a token changes no earlier position's logits), RoPE's relative-position property (the scores
depend on the positions' difference only), and a tied head being the embedding.
Needs only torch (run with /usr/bin/python3).
"""

import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_gpt2 as tg  # noqa: E402  (the safetensors reader only)


def param_shapes(cfg):
    """Hugging Face LlamaForCausalLM names -> shapes (nn.Linear weights are [out, in])."""
    d, hd = cfg["hidden"], cfg["hidden"] // cfg["heads"]
    kv = hd * cfg["kv_heads"]
    shapes = {"model.embed_tokens.weight": [cfg["vocab"], d]}
    for i in range(cfg["layers"]):
        p = f"model.layers.{i}."
        shapes.update({
            p + "input_layernorm.weight": [d],
            p + "self_attn.q_proj.weight": [d, d],
            p + "self_attn.k_proj.weight": [kv, d],
            p + "self_attn.v_proj.weight": [kv, d],
            p + "self_attn.o_proj.weight": [d, d],
            p + "post_attention_layernorm.weight": [d],
            p + "mlp.gate_proj.weight": [cfg["ffn"], d],
            p + "mlp.up_proj.weight": [cfg["ffn"], d],
            p + "mlp.down_proj.weight": [d, cfg["ffn"]],
        })
    shapes["model.norm.weight"] = [d]
    if not cfg["tied"]:
        shapes["lm_head.weight"] = [cfg["vocab"], d]
    return shapes


def rms_norm(x, w, eps):
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def llama3_scaled(inv_freq, scaling):
    """transformers' _compute_llama3_parameters: low frequencies divided by `factor`, high ones
    kept, a smooth blend between (wavelengths measured against the original context)."""
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_context = scaling["original_max_position_embeddings"]
    low_freq_wavelen, high_freq_wavelen = old_context / low, old_context / high
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth = (old_context / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(medium, smoothed, scaled)


def rope_cos_sin(T, hd, theta, dtype, scaling=None):
    inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    if scaling:
        inv_freq = llama3_scaled(inv_freq, scaling)
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


class Llama:
    def __init__(self, cfg, params):
        self.cfg = dict(cfg)
        self.p = params
        self.params = params  # torch_reference.py's name for the {hf name: tensor} dict

    @classmethod
    def from_safetensors(cls, path, dtype=torch.float64):
        """A shardlab Llama weights file: the config in its metadata (written by `shardlab init
        --arch llama`, torch_llama's key names), every tensor under its Hugging Face name; the
        tensors become float64 leaves that take gradients."""
        tensors, meta = tg.read_safetensors(path)
        cfg = json.loads(meta["config"])
        shapes = param_shapes(cfg)
        if set(shapes) != set(tensors):
            raise ValueError(f"{path}: missing {sorted(set(shapes) - set(tensors))}, "
                             f"unexpected {sorted(set(tensors) - set(shapes))}")
        for name, shape in shapes.items():
            if list(tensors[name].shape) != shape:
                raise ValueError(f"{path}: {name} is {list(tensors[name].shape)}, not {shape}")
        return cls(cfg, {n: t.detach().to(dtype).clone().requires_grad_(True)
                         for n, t in tensors.items()})

    def __call__(self, idx, targets=None):
        return self.forward(idx, targets)

    @classmethod
    def random(cls, cfg, seed=0, dtype=torch.float64):
        g = torch.Generator().manual_seed(seed)
        params = {}
        for name, shape in param_shapes(cfg).items():
            if name.endswith("layernorm.weight") or name == "model.norm.weight":
                params[name] = 1 + 0.1 * torch.randn(shape, generator=g, dtype=torch.float64)
            else:
                params[name] = 0.02 * torch.randn(shape, generator=g, dtype=torch.float64)
        return cls(cfg, {k: v.to(dtype) for k, v in params.items()})

    def _attn(self, x, i, cos, sin):
        c = self.cfg
        B, T, d = x.shape
        H, Hkv = c["heads"], c["kv_heads"]
        hd = d // H
        p = f"model.layers.{i}.self_attn."
        q = (x @ self.p[p + "q_proj.weight"].T).view(B, T, H, hd).transpose(1, 2)
        k = (x @ self.p[p + "k_proj.weight"].T).view(B, T, Hkv, hd).transpose(1, 2)
        v = (x @ self.p[p + "v_proj.weight"].T).view(B, T, Hkv, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        # repeat_kv: query head h reads key/value head h // (H / Hkv).
        k = k.repeat_interleave(H // Hkv, dim=1)
        v = v.repeat_interleave(H // Hkv, dim=1)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
        y = torch.softmax(scores, dim=-1) @ v
        y = y.transpose(1, 2).reshape(B, T, d)
        return y @ self.p[p + "o_proj.weight"].T

    def _mlp(self, x, i):
        p = f"model.layers.{i}.mlp."
        gate = x @ self.p[p + "gate_proj.weight"].T
        up = x @ self.p[p + "up_proj.weight"].T
        return (F.silu(gate) * up) @ self.p[p + "down_proj.weight"].T

    def forward(self, idx, targets=None):
        c = self.cfg
        B, T = idx.shape
        x = self.p["model.embed_tokens.weight"][idx]
        cos, sin = rope_cos_sin(T, c["hidden"] // c["heads"], c["rope_theta"], x.dtype,
                                c.get("rope_scaling"))
        for i in range(c["layers"]):
            pre = f"model.layers.{i}."
            x = x + self._attn(rms_norm(x, self.p[pre + "input_layernorm.weight"], c["rms_eps"]),
                               i, cos, sin)
            x = x + self._mlp(rms_norm(x, self.p[pre + "post_attention_layernorm.weight"],
                                       c["rms_eps"]), i)
        x = rms_norm(x, self.p["model.norm.weight"], c["rms_eps"])
        head = self.p["model.embed_tokens.weight" if c["tied"] else "lm_head.weight"]
        logits = x @ head.T
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return logits, loss


TINY = {"vocab": 48, "layers": 2, "hidden": 32, "heads": 4, "kv_heads": 2, "ffn": 40,
        "rope_theta": 10000.0, "rms_eps": 1e-5, "tied": False}


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def selftest():
    torch.manual_seed(0)
    idx = torch.randint(0, TINY["vocab"], (2, 7))
    tgt = torch.randint(0, TINY["vocab"], (2, 7))
    m = Llama.random(TINY, seed=1)
    # Gradients: autograd of the float64 loss against finite differences, for one tensor of each
    # kind (gradcheck fast_mode: the directional derivative along random vectors, against the
    # analytic one; eps 1e-6, atol 1e-5 is its float64 default).
    for name in ["model.layers.0.self_attn.k_proj.weight", "model.layers.1.mlp.gate_proj.weight",
                 "model.layers.0.input_layernorm.weight", "lm_head.weight"]:
        def loss_of(w, name=name):
            saved = m.p[name]
            m.p[name] = w
            try:
                return m.forward(idx, tgt)[1]
            finally:
                m.p[name] = saved
        w = m.p[name].clone().requires_grad_(True)
        if not torch.autograd.gradcheck(loss_of, (w,), eps=1e-6, atol=1e-5, fast_mode=True):
            fail(f"gradcheck {name}")
    # GQA with kv_heads == heads is multi-head attention: repeat_kv by 1 is the identity, and a
    # 2-KV-head model equals a 4-head model whose k/v rows repeat each KV head's twice.
    gqa = Llama.random(TINY, seed=2)
    mha_cfg = dict(TINY, kv_heads=TINY["heads"])
    mha = Llama(mha_cfg, dict(gqa.p))
    hd = TINY["hidden"] // TINY["heads"]
    for i in range(TINY["layers"]):
        for w in ["k_proj", "v_proj"]:
            name = f"model.layers.{i}.self_attn.{w}.weight"
            heads = gqa.p[name].view(TINY["kv_heads"], hd, TINY["hidden"])
            mha.p[name] = heads.repeat_interleave(2, dim=0).reshape(TINY["hidden"], TINY["hidden"])
    a, b = gqa.forward(idx)[0], mha.forward(idx)[0]
    if not torch.allclose(a, b, rtol=0, atol=1e-12):
        fail(f"GQA vs expanded MHA: {(a - b).abs().max()}")
    # Causality: changing the last token changes no earlier position.
    idx2 = idx.clone()
    idx2[:, -1] = (idx2[:, -1] + 1) % TINY["vocab"]
    l1, l2 = m.forward(idx)[0], m.forward(idx2)[0]
    if not torch.equal(l1[:, :-1], l2[:, :-1]) or torch.equal(l1[:, -1], l2[:, -1]):
        fail("causality")
    # RoPE: <R(p) q, R(s) k> depends on p - s only.
    cos, sin = rope_cos_sin(16, 8, 10000.0, torch.float64)
    q, k = torch.randn(8, dtype=torch.float64), torch.randn(8, dtype=torch.float64)
    rot = lambda v, p: v * cos[p] + rotate_half(v) * sin[p]  # noqa: E731
    s1, s2 = rot(q, 5) @ rot(k, 2), rot(q, 13) @ rot(k, 10)
    if abs(s1 - s2) > 1e-12 or abs(rot(q, 0) @ rot(k, 0) - q @ k) > 1e-12:
        fail(f"rope relative positions: {s1} vs {s2}")
    # Tied: the head is the embedding (no lm_head tensor, logits = h E^T).
    tied = Llama.random(dict(TINY, tied=True), seed=3)
    if "lm_head.weight" in tied.p:
        fail("a tied model has an lm_head tensor")
    untied = Llama(dict(TINY), dict(tied.p, **{"lm_head.weight": tied.p["model.embed_tokens.weight"]}))
    if not torch.equal(tied.forward(idx)[0], untied.forward(idx)[0]):
        fail("tied head != untied head holding the embedding")
    print("ok")


if __name__ == "__main__":
    if sys.argv[1:] == ["selftest"]:
        selftest()
    else:
        print(__doc__)
        sys.exit(2)
