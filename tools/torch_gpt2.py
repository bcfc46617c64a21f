"""Independent PyTorch GPT-2 reference used as the yardstick for shardlab.

Written from the GPT-2 definition (Hugging Face GPT2LMHeadModel names, Conv1D
layout: weight [in, out], y = x @ W + b), not from the C++ sources, so that an
agreement between the two is evidence rather than a copy.

Contents:
  * a small pure-Python safetensors reader and writer (F32/BF16/F16/F64),
  * token-file loading (llm.c uint16 shards or raw bytes) and batch windows,
  * GPT2: a parameter dict plus forward(idx, targets) -> (logits, loss),
    in any float dtype, optionally under CPU bf16 autocast.

Needs only torch and numpy (run with /usr/bin/python3).
"""

import json
import math
import struct

import numpy as np
import torch
import torch.nn.functional as F

# ---------------------------------------------------------------- safetensors

_ST_TO_TORCH = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "U8": torch.uint8,
}
_TORCH_TO_ST = {v: k for k, v in _ST_TO_TORCH.items()}


def read_safetensors(path):
    """Return ({name: tensor}, metadata dict) from a safetensors file."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", None) or {}
    # bytearray gives frombuffer a writable buffer (no warning) that we own.
    data = bytearray(raw[8 + n:])
    tensors = {}
    for name, info in header.items():
        dtype = _ST_TO_TORCH.get(info["dtype"])
        if dtype is None:
            raise ValueError(f"{path}: {name}: unsupported dtype {info['dtype']}")
        begin, end = info["data_offsets"]
        shape = list(info["shape"])
        count = math.prod(shape)
        itemsize = torch.empty((), dtype=dtype).element_size()
        if end - begin != count * itemsize:
            raise ValueError(f"{path}: {name}: byte range does not match shape")
        if count == 0:
            tensors[name] = torch.empty(shape, dtype=dtype)
            continue
        flat = torch.frombuffer(data, dtype=dtype, count=count, offset=begin)
        tensors[name] = flat.clone().reshape(shape)
    return tensors, metadata


def write_safetensors(path, tensors, metadata=None):
    """Write {name: tensor} (F64/F32/F16/BF16/...) with string metadata."""
    header = {}
    blobs = []
    offset = 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        if t.dtype not in _TORCH_TO_ST:
            raise ValueError(f"{name}: unsupported dtype {t.dtype}")
        # View as bytes so bf16 (which numpy lacks) is written bit-exactly.
        blob = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {
            "dtype": _TORCH_TO_ST[t.dtype],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    hbytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    # Pad the header with spaces to 8 bytes so the data section is aligned.
    hbytes += b" " * (-len(hbytes) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hbytes)))
        f.write(hbytes)
        for blob in blobs:
            f.write(blob)


# ---------------------------------------------------------------- token data

LLMC_MAGIC = 20240520
LLMC_HEADER_INTS = 256


def load_tokens(path, limit=None):
    """Load up to `limit` tokens (all if None) as an int64 tensor.

    llm.c shards start with int32 magic 20240520; anything else is raw bytes.
    Only the needed prefix is read so large shards stay cheap.
    """
    with open(path, "rb") as f:
        head = f.read(4)
        is_llmc = len(head) == 4 and struct.unpack("<i", head)[0] == LLMC_MAGIC
        f.seek(0)
        if is_llmc:
            hdr = np.frombuffer(f.read(LLMC_HEADER_INTS * 4), dtype="<i4")
            if hdr[1] != 1:
                raise ValueError(f"{path}: unsupported llm.c shard version {hdr[1]}")
            count = int(hdr[2])
            if limit is not None:
                count = min(count, limit)
            toks = np.frombuffer(f.read(2 * count), dtype="<u2")
            if len(toks) != count:
                raise ValueError(f"{path}: shard shorter than its header says")
        else:
            toks = np.frombuffer(f.read(-1 if limit is None else limit), dtype=np.uint8)
    return torch.from_numpy(toks.astype(np.int64))


def get_batch(tokens, batch, seq, start=0):
    """Windows [start, start+batch) of length seq+1 -> (inputs, targets) [B,T]."""
    need = (start + batch) * (seq + 1)
    if tokens.numel() < need:
        raise ValueError(f"need {need} tokens for the batch, file has {tokens.numel()}")
    win = tokens[start * (seq + 1):need].view(batch, seq + 1)
    return win[:, :-1].contiguous(), win[:, 1:].contiguous()


def tokens_needed(batch, seq, start=0):
    return (start + batch) * (seq + 1)


# ---------------------------------------------------------------- model

def param_shapes(cfg):
    """Ordered {hf name: shape} for a GPT-2 config dict."""
    V, T, L, d = cfg["vocab"], cfg["context"], cfg["layers"], cfg["hidden"]
    shapes = {"transformer.wte.weight": [V, d], "transformer.wpe.weight": [T, d]}
    for i in range(L):
        p = f"transformer.h.{i}."
        shapes.update({
            p + "ln_1.weight": [d], p + "ln_1.bias": [d],
            p + "attn.c_attn.weight": [d, 3 * d], p + "attn.c_attn.bias": [3 * d],
            p + "attn.c_proj.weight": [d, d], p + "attn.c_proj.bias": [d],
            p + "ln_2.weight": [d], p + "ln_2.bias": [d],
            p + "mlp.c_fc.weight": [d, 4 * d], p + "mlp.c_fc.bias": [4 * d],
            p + "mlp.c_proj.weight": [4 * d, d], p + "mlp.c_proj.bias": [d],
        })
    shapes["transformer.ln_f.weight"] = [d]
    shapes["transformer.ln_f.bias"] = [d]
    return shapes


def is_decayed(name):
    """Weight decay applies to the 2-D matrices (embeddings and Conv1D weights)."""
    return name.endswith((".wte.weight", ".wpe.weight", "c_attn.weight",
                          "c_proj.weight", "c_fc.weight"))


def canonical_name(name):
    """Map a checkpoint name to its 'transformer.'-prefixed form, or None to skip."""
    if name == "lm_head.weight" or name.endswith((".attn.bias", ".attn.masked_bias")):
        return None  # tied head and causal-mask buffers carry no parameters
    return name if name.startswith("transformer.") else "transformer." + name


def gelu_tanh(u):
    return 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u ** 3)))


class GPT2:
    """GPT-2 over a plain {hf name: leaf tensor} dict; tied output head."""

    def __init__(self, cfg, params, dtype=torch.float64):
        if cfg.get("kv_heads", cfg["heads"]) != cfg["heads"]:
            raise ValueError("GPT-2 reference supports kv_heads == heads only")
        if cfg["hidden"] % cfg["heads"]:
            raise ValueError("hidden must be divisible by heads")
        self.cfg = dict(cfg)
        shapes = param_shapes(cfg)
        missing = sorted(set(shapes) - set(params))
        extra = sorted(set(params) - set(shapes))
        if missing or extra:
            raise ValueError(f"parameter mismatch: missing {missing}, unexpected {extra}")
        self.params = {}
        for name, shape in shapes.items():
            t = params[name]
            if list(t.shape) != shape:
                raise ValueError(f"{name}: shape {list(t.shape)} != expected {shape}")
            # Casting up from bf16/f32 is exact, so stored weights are used as-is.
            self.params[name] = t.detach().to(dtype).clone().requires_grad_(True)

    @classmethod
    def from_safetensors(cls, path, dtype=torch.float64):
        tensors, meta = read_safetensors(path)
        if "config" not in meta:
            raise ValueError(f"{path}: no 'config' in safetensors metadata")
        cfg = json.loads(meta["config"])
        params = {}
        for name, t in tensors.items():
            canon = canonical_name(name)
            if canon is None:
                continue
            if canon in params:
                raise ValueError(f"{path}: {canon} present twice")
            params[canon] = t
        return cls(cfg, params, dtype)

    @classmethod
    def random(cls, cfg, seed=0, dtype=torch.float32):
        """GPT-2 style init (N(0, 0.02), LN = 1/0, biases small) for tests."""
        g = torch.Generator().manual_seed(seed)
        params = {}
        for name, shape in param_shapes(cfg).items():
            if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")):
                # Non-trivial LN gains so their gradients are exercised too.
                t = 1.0 + 0.1 * torch.randn(shape, generator=g)
            else:
                t = 0.02 * torch.randn(shape, generator=g)
            params[name] = t
        return cls(cfg, params, dtype)

    def names(self):
        return list(self.params)

    def tensors(self):
        return list(self.params.values())

    def state(self, dtype=torch.float32):
        return {k: v.detach().to(dtype) for k, v in self.params.items()}

    def metadata(self):
        return {"config": json.dumps(self.cfg)}

    # -- forward pieces

    def _ln(self, x, prefix):
        p = self.params
        return F.layer_norm(x, (x.shape[-1],), p[prefix + ".weight"], p[prefix + ".bias"], eps=1e-5)

    def _attn(self, x, prefix):
        p = self.params
        B, T, d = x.shape
        H = self.cfg["heads"]
        hd = d // H
        qkv = x @ p[prefix + ".c_attn.weight"] + p[prefix + ".c_attn.bias"]
        q, k, v = qkv.split(d, dim=-1)
        # Head h owns columns h*hd..(h+1)*hd of each of q, k, v.
        q, k, v = (t.view(B, T, H, hd).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)  # j > i is the future
        att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, d)
        return y @ p[prefix + ".c_proj.weight"] + p[prefix + ".c_proj.bias"]

    def _mlp(self, x, prefix):
        p = self.params
        h = gelu_tanh(x @ p[prefix + ".c_fc.weight"] + p[prefix + ".c_fc.bias"])
        return h @ p[prefix + ".c_proj.weight"] + p[prefix + ".c_proj.bias"]

    def _forward(self, idx, targets):
        p = self.params
        T = idx.shape[1]
        if T > self.cfg["context"]:
            raise ValueError(f"sequence {T} exceeds context {self.cfg['context']}")
        x = p["transformer.wte.weight"][idx] + p["transformer.wpe.weight"][:T]
        for i in range(self.cfg["layers"]):
            pre = f"transformer.h.{i}"
            x = x + self._attn(self._ln(x, pre + ".ln_1"), pre + ".attn")
            x = x + self._mlp(self._ln(x, pre + ".ln_2"), pre + ".mlp")
        x = self._ln(x, "transformer.ln_f")
        logits = x @ p["transformer.wte.weight"].t()  # tied head
        loss = None
        if targets is not None:
            flat = logits.reshape(-1, logits.shape[-1])
            if flat.dtype in (torch.bfloat16, torch.float16):
                flat = flat.float()  # take the log-softmax in fp32 under autocast
            loss = F.cross_entropy(flat, targets.reshape(-1))
        return logits, loss

    def forward(self, idx, targets=None, bf16_autocast=False):
        """Return (logits [B,T,V], mean cross-entropy or None)."""
        V = self.cfg["vocab"]
        if idx.numel() and (int(idx.max()) >= V or int(idx.min()) < 0):
            raise ValueError(f"token id outside vocab [0, {V})")
        if bf16_autocast:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return self._forward(idx, targets)
        return self._forward(idx, targets)

    __call__ = forward
