#!/usr/bin/env python3
"""`shardlab train --deepspeed-config`: every mapped key reaches the options (read back with
--print-config, which stops before training), ignored and "auto" keys are listed, flags win,
--config must agree, contradictions and bad files exit 2 with a message naming the key; one short
training run records the file in report.json. Batch rules run on 2 ranks, the rest on one.
Usage: deepspeed_config_check.py SHARDLAB MPIRUN [MPIRUN ARGS...]"""
import json
import os
import subprocess
import sys
import tempfile

SHARDLAB = sys.argv[1]
MPIRUN = sys.argv[2:]
SMALL = ["--layers", "1", "--hidden", "32", "--heads", "2", "--seq", "16", "--quiet"]
failures = []


def run(ds, *flags, np=1, files=None):
    """Writes ds (a dict, or text as is) to ds.json and runs train on np ranks; (code, output)."""
    path = os.path.join(tmp, "ds.json")
    with open(path, "w") as f:
        f.write(ds if isinstance(ds, str) else json.dumps(ds))
    for name, text in (files or {}).items():
        with open(os.path.join(tmp, name), "w") as f:
            f.write(text)
    # One rank runs without mpirun (a singleton): mpirun takes 2 s more to report an exit code 2.
    launch = [*MPIRUN, "-np", str(np)] if np > 1 else []
    cmd = [*launch, SHARDLAB, "train", *SMALL, "--out", os.path.join(tmp, "out"),
           "--deepspeed-config", path, *flags]
    p = subprocess.run(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=60)
    return p.returncode, p.stdout


def options(ds, *flags, np=1, files=None):
    """The --print-config JSON and the lines before it."""
    code, out = run(ds, "--print-config", *flags, np=np, files=files)
    if code != 0:
        raise AssertionError(f"exit {code}: {out}")
    start = out.index("\n{") + 1 if not out.startswith("{") else 0
    return json.loads(out[start:]), out[:start]


def expect(name, got, want):
    for key, value in want.items():
        v = got[key]
        same = abs(v - value) <= 1e-6 * abs(value) if isinstance(value, float) else v == value
        if not same:
            failures.append(f"{name}: {key} is {v!r}, expected {value!r}")


def refused(name, ds, text, *flags, np=1, files=None):
    code, out = run(ds, *flags, np=np, files=files)
    if code != 2 or text not in out:
        failures.append(f"{name}: expected exit 2 and {text!r}, got exit {code}: {out}")


with tempfile.TemporaryDirectory() as tmp:
    # Every key group at once, on 2 ranks: train_batch_size 32 = micro 4 x accum 4 x 2 ranks.
    full = {
        "train_batch_size": 32, "train_micro_batch_size_per_gpu": 4,
        "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"},
                              "overlap_comm": True},
        "bf16": {"enabled": True}, "gradient_clipping": 0.5,
        "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "betas": [0.8, 0.99], "eps": 1e-6,
                                                  "adam_w_mode": True,
                                                  "weight_decay": 0.05}},
        "scheduler": {"type": "WarmupCosineLR",
                      "params": {"total_num_steps": 7, "warmup_num_steps": 3,
                                 "cos_min_ratio": 0.05, "warmup_type": "linear"}},
        "steps_per_print": 10, "wall_clock_breakdown": False,
    }
    c, out = options(full, np=2)
    expect("full", c, {"zero": 2, "offload": True, "precision": "bf16", "micro_batch": 4,
                       "grad_accum": 4, "grad_clip": 0.5, "lr": 3e-4, "beta1": 0.8, "beta2": 0.99,
                       "eps": 1e-6, "weight_decay": 0.05, "schedule": "cosine", "warmup": 3,
                       "steps": 7, "min_lr_ratio": 0.05, "ranks": 2,
                       "deepspeed_config": os.path.join(tmp, "ds.json")})
    if "ignored keys: steps_per_print, wall_clock_breakdown, zero_optimization.overlap_comm\n" \
            not in out or out.count("ignored keys") != 1:
        failures.append(f"full: the ignored keys are not listed once (by rank 0): {out}")
    if "warmup_type" in out:
        failures.append(f"full: a note about warmup_type \"linear\": {out}")

    # fp16 with its loss scale, "Adam" (AdamW by default), WarmupDecayLR (linear, floor min/max,
    # warmup at least 2), DeepSpeed's defaults (no clipping, stage 0, betas), and
    # train_batch_size following micro-batch x accumulation x ranks.
    c, out = options({"fp16": {"enabled": True, "initial_scale_power": 10, "hysteresis": 2},
                      "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 3,
                      "optimizer": {"type": "Adam", "params": {"weight_decay": 0.1}},
                      "scheduler": {"type": "WarmupDecayLR",
                                    "params": {"warmup_min_lr": 0.0005, "warmup_max_lr": 0.002,
                                               "warmup_num_steps": 1, "total_num_steps": 5}}},
                     np=2)
    expect("fp16", c, {"precision": "fp16", "loss_scale": 1024.0, "micro_batch": 2,
                       "grad_accum": 3, "zero": 0, "offload": False, "grad_clip": 0.0,
                       "lr": 0.002, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
                       "weight_decay": 0.1, "schedule": "linear", "min_lr_ratio": 0.25,
                       "warmup": 2, "steps": 5})
    for text in ("ignored keys: fp16.hysteresis", "no warmup_type (DeepSpeed's default is \"log\")",
                 "warmup_min_lr 0.0005: DeepSpeed warms up from it, shardlab from 0"):
        if text not in out:
            failures.append(f"fp16: missing {text!r}: {out}")

    # Neither bf16 nor fp16 enabled: fp32. WarmupLR: constant. "auto" counts as not given.
    c, out = options({"bf16": {"enabled": False}, "train_micro_batch_size_per_gpu": "auto",
                      "scheduler": {"type": "WarmupLR",
                                    "params": {"warmup_num_steps": 4, "warmup_max_lr": "auto",
                                               "warmup_type": "linear"}}},
                     "--micro-batch", "5", "--lr", "0.01")
    expect("fp32", c, {"precision": "fp32", "schedule": "constant", "warmup": 4,
                       "micro_batch": 5, "lr": 0.01})
    if "\"auto\" keys left to flags and defaults: train_micro_batch_size_per_gpu, " \
       "scheduler.params.warmup_max_lr" not in out:
        failures.append(f"auto: the \"auto\" keys are not listed: {out}")

    # Flags win over the file; a flag that changes the batch is said to change it.
    c, out = options({"zero_optimization": {"stage": 3}, "train_batch_size": 16,
                      "train_micro_batch_size_per_gpu": 4}, "--zero", "1", "--micro-batch", "2",
                     np=2)
    expect("flags", c, {"zero": 1, "micro_batch": 2, "grad_accum": 2})
    for text in ("the command line wins: --zero 1 (the file: zero_optimization.stage 3)",
                 "the command line makes the global batch 8 sequences, not train_batch_size 16"):
        if text not in out:
            failures.append(f"flags: missing {text!r}: {out}")

    # --config and the file: the same value is fine, another is a contradiction; DeepSpeed's
    # defaults (no gradient_clipping: 0) yield to --config.
    ds = {"zero_optimization": {"stage": 3}}
    c, _ = options(ds, "--config", "same.toml",
                   files={"same.toml": "zero = 3\ngrad-clip = 2.0\n"})
    expect("--config agrees", c, {"zero": 3, "grad_clip": 2.0})
    refused("--config disagrees", ds,
            "--config 'other.toml' sets zero = 2 but deepspeed config", "--config", "other.toml",
            files={"other.toml": "zero = 2\n"})

    # Contradictions and what shardlab cannot do: exit 2, the key and the fix named.
    refused("bf16 and fp16", {"bf16": {"enabled": True}, "fp16": {"enabled": True}},
            "bf16.enabled and fp16.enabled are both true (DeepSpeed refuses this too); enable one")
    refused("batch disagrees", {"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4,
                                "gradient_accumulation_steps": 2},
            "train_batch_size 30 is not train_micro_batch_size_per_gpu 4 x "
            "gradient_accumulation_steps 2 x 2 ranks = 16", np=2)
    refused("batch indivisible", {"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4},
            "train_batch_size 30 is not a multiple of train_micro_batch_size_per_gpu 4 x 2 ranks "
            "= 8", np=2)
    refused("nvme", {"zero_optimization": {"offload_optimizer": {"device": "nvme"}}},
            "offload_optimizer.device \"nvme\" is not supported")
    refused("parameter offload", {"zero_optimization": {"offload_param": {"device": "cpu"}}},
            "shardlab has no parameter offload")
    refused("optimizer", {"optimizer": {"type": "Lamb"}},
            "optimizer.type \"Lamb\" is not supported: shardlab's optimizer is AdamW")
    refused("Adam with L2", {"optimizer": {"type": "Adam", "params": {"adam_w_mode": False,
                                                                      "weight_decay": 0.1}}},
            "asks for Adam's L2 decay")
    refused("static loss scale", {"fp16": {"enabled": True, "loss_scale": 128}},
            "fp16.loss_scale 128 asks for a static loss scale")
    refused("scheduler", {"scheduler": {"type": "OneCycle"}},
            "scheduler.type \"OneCycle\" is not supported")
    refused("out of range", {"scheduler": {"type": "WarmupCosineLR",
                                           "params": {"cos_min_ratio": 2}}},
            "bad value for 'min-lr-ratio'")
    # Bad files.
    refused("bad JSON", "{\"zero_optimization\": {\"stage\": 2,}}", "is not valid JSON")
    refused("number past double", "{\"gradient_clipping\": 1e999}", "is not valid JSON")  # fuzzer's find
    refused("wrong type", {"zero_optimization": {"stage": "two"}},
            "zero_optimization.stage must be a whole number, not \"two\"")
    refused("not an object", {"zero_optimization": 2},
            "zero_optimization must be an object")
    refused("missing file", {}, "missing.json' does not exist", "--deepspeed-config",
            os.path.join(tmp, "missing.json"))

    # A short run: the file's options reach the training and its report.
    code, out = run({"zero_optimization": {"stage": 1}, "train_micro_batch_size_per_gpu": 2,
                     "bf16": {"enabled": True}}, "--steps", "2", np=2)
    if code != 0:
        failures.append(f"run: exit {code}: {out}")
    else:
        c = json.load(open(os.path.join(tmp, "out", "report.json")))["config"]
        expect("run", c, {"zero": 1, "micro_batch": 2, "grad_accum": 1, "precision": "bf16",
                          "deepspeed_config": os.path.join(tmp, "ds.json")})

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("ok: deepspeed config mapping")
