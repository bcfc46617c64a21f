#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora (fuzz/corpus/<parser>/): a few small valid inputs each, so
libFuzzer starts from files the parsers accept. The files are committed; rerun this after
changing it (python3 fuzz/make_corpus.py)."""
import json
import math
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(parser, name, data):
    d = os.path.join(HERE, "corpus", parser)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


# ---- safetensors: as model/safetensors.cpp writes them (header space-padded to 8 bytes) -------
def safetensors(tensors, metadata=None):
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, blob in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


f32 = lambda *v: struct.pack(f"<{len(v)}f", *v)
u16 = lambda *v: struct.pack(f"<{len(v)}H", *v)
write("safetensors", "two_tensors.safetensors", safetensors(
    [("wte.weight", "F32", [2, 3], f32(0.5, -1, 2, 0, 1e-3, 3)),
     ("h.0.ln_1.bias", "BF16", [4], u16(0x3f80, 0xbf80, 0, 0x4000))],
    {"format": "pt", "config": '{"vocab":2,"context":1,"layers":1,"hidden":3,"heads":1}'}))
write("safetensors", "scalar_and_empty.safetensors", safetensors(
    [("scale", "F16", [], u16(0x3c00)), ("empty", "F32", [0, 5], b"")]))
write("safetensors", "no_tensors.safetensors", safetensors([], {"note": "metadata only"}))


# GPT-2 weights as `shardlab init` writes them (model/param_layout.cpp's names and shapes), for the
# weights loader behind the reader: V=3, T=2, L=1, d=2, one head.
def gpt_tensors(V=3, T=2, d=2, prefix="transformer."):
    shapes = [("wte.weight", [V, d]), ("wpe.weight", [T, d])]
    for name, shape in [("ln_1.weight", [d]), ("ln_1.bias", [d]), ("attn.c_attn.weight", [d, 3 * d]),
                        ("attn.c_attn.bias", [3 * d]), ("attn.c_proj.weight", [d, d]),
                        ("attn.c_proj.bias", [d]), ("ln_2.weight", [d]), ("ln_2.bias", [d]),
                        ("mlp.c_fc.weight", [d, 4 * d]), ("mlp.c_fc.bias", [4 * d]),
                        ("mlp.c_proj.weight", [4 * d, d]), ("mlp.c_proj.bias", [d])]:
        shapes.append(("h.0." + name, shape))
    shapes += [("ln_f.weight", [d]), ("ln_f.bias", [d])]
    return [(prefix + name, shape) for name, shape in shapes]


config = '{"vocab":3,"context":2,"layers":1,"hidden":2,"heads":1,"kv_heads":1}'
write("safetensors", "gpt_f32.safetensors", safetensors(
    [(n, "F32", s, f32(*[0.01 * i for i in range(math.prod(s))])) for n, s in gpt_tensors()],
    {"format": "pt", "config": config}))
# Hugging Face's spelling: no "transformer." prefix, a tied lm_head and mask buffers to ignore.
write("safetensors", "gpt_bf16_hf_names.safetensors", safetensors(
    [(n, "BF16", s, u16(*[0x3c00 + i for i in range(math.prod(s))]))
     for n, s in gpt_tensors(prefix="")] +
    [("lm_head.weight", "BF16", [3, 2], u16(*range(6))), ("h.0.attn.bias", "F16", [0], b"")],
    {"format": "pt", "config": config}))

# ---- token data: llm.c shards (256 int32 header: magic, version, count) and plain text --------
def shard(tokens, magic=20240520, version=1):
    header = struct.pack("<3i", magic, version, len(tokens)) + b"\0" * (1024 - 12)
    return header + u16(*tokens)


write("token_shard", "shard.bin", shard([50256, 464, 2068, 7586, 21831, 0, 1, 65535]))
write("token_shard", "empty_shard.bin", shard([]))
write("token_shard", "text.txt", "The quick brown fox\njumps over the lazy dog.\n")

# ---- config files: `shardlab train --config` TOML -----------------------------------------------
with open(os.path.join(HERE, "..", "examples", "demo.toml")) as f:
    write("config", "demo.toml", f.read())
write("config", "every_key.toml", """\
# every key `shardlab train` accepts, each with a valid value
config = "other.toml"
deepspeed-config = "ds_config.json"
print-config = false
preset = "gpt2"
layers = 2
hidden = 64
heads = 4
kv-heads = 4
vocab = 256
seq = 32
init = "weights.safetensors"
precision = "fp16"
zero = 3
offload = true
prefetch = 1
checkpoint = "every:2"
micro-batch = 2
grad-accum = 2
global-batch = 8
steps = 10
lr = 3e-4
warmup = 0
schedule = "constant"
min-lr-ratio = 0.0
weight-decay = 0.01
beta1 = 0.9
beta2 = 0.999
eps = 1e-8
grad-clip = 0.0
loss-scale = 1024.0
seed = 9223372036854775807
data = "/usr/share/common-licenses/GPL-3"
val-every = 5
val-batches = 1
out = "out/run"
save-weights = "w.safetensors"
sample = 20
save-every = 5
resume = "out/run"
stop-after = 4
device = "cpu"
threads = 1
comm-cpus = "0,1"
share-gpu = false
transport = "auto"
quiet = true
overwrite = false
""")
write("config", "syntax.toml", """\
'micro-batch' = 0x10   # hex integer, literal key
"lr" = +1.5e-3
steps = 1_000
data = '''C:\\data\\tokens.bin'''
out = "out/\\u00e9t\\u00e9"
loss-scale = 6.5e+04
""")

# ---- DeepSpeed configs: `shardlab train --deepspeed-config` JSON ---------------------------------
write("deepspeed_config", "every_key.json", json.dumps({
    "train_batch_size": 24, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
    "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": True},
                          "offload_param": {"device": "none"}, "overlap_comm": True},
    "fp16": {"enabled": True, "loss_scale": 0, "initial_scale_power": 12, "hysteresis": 2},
    "bf16": {"enabled": False}, "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "betas": [0.9, 0.95], "eps": 1e-8,
                                              "weight_decay": 0.1, "adam_w_mode": True,
                                              "bias_correction": True, "torch_adam": False}},
    "scheduler": {"type": "WarmupCosineLR",
                  "params": {"total_num_steps": 100, "warmup_num_steps": 10, "warmup_type": "linear",
                             "warmup_min_ratio": 0.0, "cos_min_ratio": 0.1}},
    "steps_per_print": 10, "wall_clock_breakdown": False}, indent=1))
write("deepspeed_config", "hf_auto.json", json.dumps({
    "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
    "gradient_accumulation_steps": "auto", "gradient_clipping": "auto",
    "fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"},
    "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "none"}},
    "optimizer": {"type": "Adam", "params": {"lr": "auto", "betas": "auto", "eps": "auto",
                                             "weight_decay": "auto"}},
    "scheduler": {"type": "WarmupDecayLR",
                  "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto",
                             "warmup_num_steps": "auto", "total_num_steps": "auto"}}}, indent=1))
write("deepspeed_config", "warmup_lr.json",
      '{"bfloat16": {"enabled": true}, "train_batch_size": 6, "scheduler": {"type": "WarmupLR", '
      '"params": {"warmup_min_lr": 0, "warmup_max_lr": 0.001, "warmup_num_steps": 1}}}')


# ---- checkpoints: rank files as optim/checkpoint_file.cpp writes them (format 2) --------------
def fnv1a(b):
    h = 1469598103934665603
    for c in b:
        h = ((h ^ c) * 1099511628211) % (1 << 64)
    return h


def stored_range(numel, ranks, q):
    shard = (numel + ranks - 1) // ranks
    begin = min(numel, q * shard)
    return begin, min(numel, begin + shard) - begin


def checkpoint(rank, ranks, units, step=3, iteration=4, loss_scale=1.0):
    out = b"SHLBCKP2" + struct.pack("<IIIiifiq", rank, ranks, len(units), step, iteration,
                                    loss_scale, 2, 1)
    for numel in units:
        begin, count = stored_range(numel, ranks, rank)
        out += struct.pack("<QQQ", numel, begin, count)
        for k in range(3):
            out += struct.pack(f"<{count}f", *[0.25 * (i + k) for i in range(count)])
    return out + struct.pack("<Q", fnv1a(out))


write("checkpoint", "one_rank.bin", checkpoint(0, 1, [5, 3]))
write("checkpoint", "rank1_of3.bin", checkpoint(1, 3, [7, 2, 4], loss_scale=65536.0))
write("checkpoint", "empty_slice.bin", checkpoint(3, 4, [2, 9]))
