"""Hugging Face checkpoint folders, written and read the way transformers' save_pretrained /
from_pretrained do, independently of shardlab's C++ (model/weights_writer.cpp, weights_io.cpp), so
that the two agreeing is evidence (tests/hf_checkpoint_check.sh).

    hf_folder.py export W.safetensors OUT/ [--shard-bytes N] [--dtype fp32|bf16]
                 [--rope-scaling FACTOR,LOW,HIGH,CONTEXT --single S.safetensors]
        A shardlab weights file (config in its metadata) as save_pretrained lays out a
        LlamaForCausalLM or GPT2LMHeadModel: config.json in Hugging Face's keys, the tensors in
        the state_dict's order split greedily into shards of at most N bytes
        (model-0000i-of-0000n.safetensors + model.safetensors.index.json, or one
        model.safetensors), metadata {"format": "pt"} only — no shardlab config. With
        --rope-scaling the config gets Llama 3's rope_scaling, and --single writes the same
        tensors as one file with that config in its metadata (the float64 reference's input).
    hf_folder.py compare OUT/ W.safetensors
        Reads a folder (the index, every shard it names, config.json) and checks it holds exactly
        W's tensors, bit for bit, in the shards the index names, with total_size the tensors'
        bytes, and a config.json describing W's model.

Needs only torch (run with /usr/bin/python3).
"""

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_gpt2 as tg  # noqa: E402  (the safetensors reader and writer)


def hf_config(cfg):
    """shardlab's metadata config -> config.json, in transformers' own field names."""
    if cfg.get("arch", "gpt2") == "llama":
        return {"model_type": "llama", "architectures": ["LlamaForCausalLM"],
                "vocab_size": cfg["vocab"], "max_position_embeddings": cfg["context"],
                "num_hidden_layers": cfg["layers"], "hidden_size": cfg["hidden"],
                "num_attention_heads": cfg["heads"], "num_key_value_heads": cfg["kv_heads"],
                "intermediate_size": cfg["ffn"], "rope_theta": cfg["rope_theta"],
                "rms_norm_eps": cfg["rms_eps"], "tie_word_embeddings": cfg["tied"],
                "hidden_act": "silu", "torch_dtype": "float32",
                "rope_scaling": dict(cfg["rope_scaling"], rope_type="llama3")
                if cfg.get("rope_scaling") else None}
    return {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
            "vocab_size": cfg["vocab"], "n_positions": cfg["context"], "n_layer": cfg["layers"],
            "n_embd": cfg["hidden"], "n_head": cfg["heads"], "torch_dtype": "float32"}


def state_dict_order(names):
    """LlamaForCausalLM's state_dict order: embeddings, each layer's modules, the norm, the head."""
    def key(name):
        parts = name.split(".")
        if "layers" in parts or "h" in parts:
            i = parts.index("layers") if "layers" in parts else parts.index("h")
            return (1, int(parts[i + 1]), name)
        return (0 if "embed" in name or ".wte" in name or ".wpe" in name else 2, 0, name)
    return sorted(names, key=key)


def export(src, out, shard_bytes, dtype, rope_scaling=None, single=None):
    tensors, meta = tg.read_safetensors(src)
    cfg = json.loads(meta["config"])
    if rope_scaling:  # Llama 3.1 / 3.2's, in config.json and in `single`'s metadata config
        factor, low, high, context = rope_scaling.split(",")
        cfg["rope_scaling"] = {"factor": float(factor), "low_freq_factor": float(low),
                               "high_freq_factor": float(high),
                               "original_max_position_embeddings": int(context)}
    if single:
        tg.write_safetensors(single, tensors, {"format": "pt", "config": json.dumps(cfg)})
    to = torch.bfloat16 if dtype == "bf16" else torch.float32
    shards, current, size = [], {}, 0
    for name in state_dict_order(tensors):
        t = tensors[name].to(to)
        nbytes = t.numel() * t.element_size()
        if current and size + nbytes > shard_bytes:  # save_pretrained's greedy split
            shards.append(current)
            current, size = {}, 0
        current[name] = t
        size += nbytes
    shards.append(current)
    os.makedirs(out, exist_ok=True)
    n = len(shards)
    names = ["model.safetensors"] if n == 1 else [
        f"model-{i + 1:05d}-of-{n:05d}.safetensors" for i in range(n)]
    weight_map, total = {}, 0
    for name, shard in zip(names, shards):
        tg.write_safetensors(os.path.join(out, name), shard, {"format": "pt"})
        for t_name, t in shard.items():
            weight_map[t_name] = name
            total += t.numel() * t.element_size()
    if n > 1:
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    config = hf_config(cfg)
    config["torch_dtype"] = "bfloat16" if dtype == "bf16" else "float32"
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    print(f"wrote {out}: {n} shard(s), {len(weight_map)} tensors, {total} bytes")


def fail(msg):
    print(f"hf_folder compare: FAIL: {msg}")
    sys.exit(1)


def compare(folder, single):
    want, meta = tg.read_safetensors(single)
    cfg = json.loads(meta["config"])
    index_path = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index_path):
        with open(index_path) as f:
            index = json.load(f)
        weight_map = index["weight_map"]
        files = sorted(set(weight_map.values()))
        n = len(files)
        if files != [f"model-{i + 1:05d}-of-{n:05d}.safetensors" for i in range(n)]:
            fail(f"shard names {files} are not save_pretrained's")
    else:
        files, weight_map, index = ["model.safetensors"], None, None
    stale = [f for f in os.listdir(folder) if f.startswith("model") and f not in files
             and f != "model.safetensors.index.json"]
    if stale:
        fail(f"files of another save beside this one: {stale}")
    got, total = {}, 0
    for name in files:
        tensors, _ = tg.read_safetensors(os.path.join(folder, name))
        for t_name, t in tensors.items():
            if weight_map is not None and weight_map.get(t_name) != name:
                fail(f"{t_name} is in {name}, the index says {weight_map.get(t_name)}")
            if t_name in got:
                fail(f"{t_name} is in two shards")
            got[t_name] = t
            total += t.numel() * t.element_size()
    if index is not None and index["metadata"]["total_size"] != total:
        fail(f"total_size {index['metadata']['total_size']} != the tensors' {total} bytes")
    if set(got) != set(want):
        fail(f"tensors differ: missing {sorted(set(want) - set(got))}, "
             f"extra {sorted(set(got) - set(want))}")
    for name, t in want.items():
        if got[name].dtype != t.dtype or not torch.equal(got[name], t):
            fail(f"{name} differs")
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    expect = hf_config(cfg)
    for key, value in expect.items():
        if key != "torch_dtype" and config.get(key) != value:
            fail(f"config.json {key} = {config.get(key)!r}, expected {value!r}")
    print(f"hf_folder compare: ok ({len(files)} file(s), {len(got)} tensors bit for bit, "
          f"{total} bytes, config.json agrees)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("src")
    e.add_argument("out")
    e.add_argument("--shard-bytes", type=int, default=5_000_000_000)
    e.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    e.add_argument("--rope-scaling", help="FACTOR,LOW,HIGH,CONTEXT: a llama3 rope_scaling")
    e.add_argument("--single", help="also write the tensors with this config as one file")
    c = sub.add_parser("compare")
    c.add_argument("folder")
    c.add_argument("single")
    a = ap.parse_args()
    if a.cmd == "export":
        export(a.src, a.out, a.shard_bytes, a.dtype, a.rope_scaling, a.single)
    else:
        compare(a.folder, a.single)


if __name__ == "__main__":
    main()
