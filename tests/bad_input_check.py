#!/usr/bin/env python3
"""Bad input, table-driven: every case must exit with code 2, print a message naming the problem
and the fix, take under 5 s and under 1 GB of memory (the peak resident set of every process it
started), and leave the run directory it points at untouched (a finished run sits there; its
files' bytes are compared before and after every case).
Usage: bad_input_check.py SHARDLAB MPIRUN [MPIRUN ARGS...]"""
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time

SHARDLAB = sys.argv[1]
MPIRUN = sys.argv[2:]
SMALL = ["--layers", "1", "--hidden", "32", "--heads", "2", "--seq", "16", "--steps", "2", "--quiet"]


def snapshot(root):
    # Every file but .lock, which names the run holding the directory (launch/run_lock.h): a
    # command that got that far held it for its life, and it holds no data.
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            if os.path.relpath(p, root) == ".lock":
                continue
            out[os.path.relpath(p, root)] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    return out


with tempfile.TemporaryDirectory() as tmp:
    run = os.path.join(tmp, "run")  # a finished run that no bad command may touch
    subprocess.run([SHARDLAB, "train", *SMALL, "--save-every", "1", "--out", run], check=True,
                   capture_output=True)
    config_dir = os.path.join(tmp, "a-directory")
    os.mkdir(config_dir)
    bad_toml = os.path.join(tmp, "bad.toml")
    open(bad_toml, "w").write("beta2 = 1.5\n")
    weights = os.path.join(tmp, "w.safetensors")
    subprocess.run([SHARDLAB, "init", "--layers", "1", "--hidden", "32", "--heads", "2", "--seq", "16",
                    "--out", weights], check=True, capture_output=True)
    train = [SHARDLAB, "train", *SMALL, "--out", run]
    eval_ = [SHARDLAB, "eval", "--data", "/usr/share/common-licenses/GPL-3"]

    # Damaged copies of a good weights file, each made the way the fault happens.
    raw = open(weights, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header, data = json.loads(raw[8:8 + n]), raw[8 + n:]

    def write(name, header_obj, data_bytes, length_delta=0, pad=""):
        text = json.dumps(header_obj) + pad
        path = os.path.join(tmp, name)
        open(path, "wb").write(struct.pack("<Q", len(text) + length_delta) + text.encode() + data_bytes)
        return path

    huge = json.loads(json.dumps(header))
    cfg = json.loads(huge["__metadata__"]["config"])
    cfg["layers"] = 2_000_000_000
    huge["__metadata__"]["config"] = json.dumps(cfg)
    huge_layers = write("huge.safetensors", huge, data)
    off_by_one = write("offbyone.safetensors", header, data, length_delta=-1, pad=" ")
    trailing = write("trailing.safetensors", header, data + b"garbage")
    name, entry = next((k, v) for k, v in header.items() if k != "__metadata__" and v["dtype"] == "F32")
    nan_data = bytearray(data)
    nan_data[entry["data_offsets"][0]:entry["data_offsets"][0] + 4] = struct.pack("<f", float("nan"))
    nan_weights = write("nan.safetensors", header, bytes(nan_data))
    # One shard of a sharded save given alone: the config metadata and one tensor of the model.
    b, e = entry["data_offsets"]
    one_shard = write("model-00002-of-00003.safetensors",
                      {"__metadata__": header["__metadata__"], name: dict(entry, data_offsets=[0, e - b])},
                      data[b:e])
    shard = os.path.join(tmp, "bad_magic.bin")
    tokens = [i % 64 for i in range(5000)]
    hdr = [20240521, 1, len(tokens)] + [0] * 253
    open(shard, "wb").write(struct.pack("<256i", *hdr) + struct.pack(f"<{len(tokens)}H", *tokens))
    # A Hugging Face-style file (no config metadata) with a tensor named transformer.h.x.* (once
    # "error: stoi"; now the inference goes on to its own message).
    plain = {k: v for k, v in header.items() if k != "__metadata__"}
    odd = {"transformer.h.x.attn.bias": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}
    for k, v in plain.items():
        b, e = v["data_offsets"]
        odd[k] = dict(v, data_offsets=[b + 4, e + 4])
    odd_name = write("oddname.safetensors", odd, b"\0\0\0\0" + data)
    # Input nested 100,000 levels deep, where every walk of it would overflow the stack.
    deep_json = os.path.join(tmp, "deep.json")
    open(deep_json, "w").write('{"a": ' * 100_000 + "1" + "}" * 100_000)
    deep_keys = os.path.join(tmp, "deep_keys.toml")
    open(deep_keys, "w").write("a" + ".a" * 100_000 + " = 1\n")
    deep_arrays = os.path.join(tmp, "deep_arrays.toml")
    open(deep_arrays, "w").write("lr = " + "[" * 100_000 + "]" * 100_000 + "\n")
    # A copy of the run's checkpoint whose meta.json claims 2e9 layers.
    huge_ckpt = os.path.join(tmp, "huge_ckpt")
    shutil.copytree(os.path.join(run, "checkpoint"), huge_ckpt)
    meta = json.load(open(os.path.join(huge_ckpt, "meta.json")))
    meta["config"]["model"]["layers"] = 2_000_000_000
    json.dump(meta, open(os.path.join(huge_ckpt, "meta.json"), "w"))
    # Copies with a field of the wrong type, and with a rank file cut short by a copy.
    typed_ckpt = os.path.join(tmp, "typed_ckpt")
    shutil.copytree(os.path.join(run, "checkpoint"), typed_ckpt)
    json.dump(dict(meta, ranks="1"), open(os.path.join(typed_ckpt, "meta.json"), "w"))
    cut_ckpt = os.path.join(tmp, "cut_ckpt")
    shutil.copytree(os.path.join(run, "checkpoint"), cut_ckpt)
    os.truncate(os.path.join(cut_ckpt, "rank-0.bin"), os.path.getsize(os.path.join(cut_ckpt, "rank-0.bin")) // 2)
    big_text = os.path.join(tmp, "big.txt")  # 2.1 MB: eval batches far past memory
    open(big_text, "wb").write(open("/usr/share/common-licenses/GPL-3", "rb").read() * 60)
    limited = ["bash", "-c", 'ulimit -v 1500000 && exec "$0" "$@"']  # 1.5 GB of address space
    small_text = os.path.join(tmp, "small.txt")
    open(small_text, "wb").write(open("/usr/share/common-licenses/GPL-3", "rb").read()[:12000])
    cases = [
        # (what, command, text the message must hold)
        ("negative learning rate", train + ["--lr", "-1"], "--lr: -1 is not in [0, inf)"),
        ("NaN learning rate", train + ["--lr", "nan"], "--lr: nan is not in [0, inf)"),
        ("beta1 of 2", train + ["--beta1", "2"], "--beta1: 2 is not in [0, 1)"),
        ("negative warmup", train + ["--warmup", "-5"], "--warmup: -5 is below 0; use 0 or more"),
        ("zero heads", train + ["--heads", "0"], "--heads: 0 is below 1; use 1 or more"),
        ("zero sequence", train + ["--seq", "0"], "--seq: 0 is below 1; use 1 or more"),
        ("zero epsilon", train + ["--eps", "0"], "--eps: 0 is not in (0, inf)"),
        ("epsilon 0 in fp32", train + ["--eps", "1e-50"],
         "--eps: 1e-50 is 0 in fp32, the type it is kept in, which is not in (0, inf)"),
        ("beta2 1 in fp32", train + ["--beta2", "0.99999999999"], "--beta2: 0.99999999999 is 1 in fp32"),
        ("learning rate Inf in fp32", train + ["--lr", "1e39"], "--lr: 1e39 is inf in fp32"),
        ("an AdamW update that overflows fp32", train + ["--lr", "1e30", "--weight-decay", "1e10"],
         "AdamW at step 1: lr 1e+30 with weight decay 10000000000"),
        ("loss scale below 1", train + ["--loss-scale", "0.5"], "--loss-scale: 0.5 is not in [1, inf)"),
        ("loss scale without fp16", train + ["--precision", "bf16", "--loss-scale", "1024"],
         "--loss-scale 1024 applies to --precision fp16 only (bf16 needs no loss scaling)"),
        ("shape flags with --init", [SHARDLAB, "train", "--init", weights, "--seq", "8", "--steps", "1", "--out", run],
         "takes the model's shape from the file; drop --layers"),
        ("--preset with --init", [SHARDLAB, "train", "--init", weights, "--preset", "tiny-llama", "--steps", "1", "--out", run],
         "takes the model from the file (its family, shape and head); drop --preset tiny-llama"),
        ("init --seed -1", [SHARDLAB, "init", "--preset", "tiny", "--seed", "-1", "--out", os.path.join(tmp, "s.safetensors")],
         "--seed: -1 is negative; use a seed from 0 to 2^64 - 1"),
        ("train --seed 2^64", train + ["--seed", "18446744073709551616"], "--seed: 18446744073709551616 is above 2^64 - 1"),
        ("--prefetch -1", train + ["--zero", "3", "--prefetch", "-1"], "--prefetch: -1 is below 0; use 0 or more"),
        ("--ffn with --init", [SHARDLAB, "train", "--init", weights, "--ffn", "96", "--steps", "1", "--out", run],
         "--heads, --kv-heads, --ffn, --vocab and --seq"),
        ("--config of a directory", train + ["--config", config_dir], "is not a file; give --config a TOML file"),
        ("--config value out of range", train + ["--config", bad_toml], "bad value for 'beta2': --beta2: 1.5 is not in [0, 1)"),
        ("--out holding another run", train, "holds another run (report.json); continue it with --resume"),
        ("--out holding another run, 2 ranks", MPIRUN + ["-np", "2"] + train, "holds another run"),
        ("train --init of a config claiming 2e9 layers", [SHARDLAB, "train", "--init", huge_layers, "--steps", "1", "--out", os.path.join(tmp, "new3")],
         "2000000000 layers, hidden 32, vocab 256, context 16) describes 2.54e+13 parameters"),
        ("train --init of it on 2 ranks", MPIRUN + ["-np", "2", SHARDLAB, "train", "--init", huge_layers, "--steps", "1", "--out", os.path.join(tmp, "new4")],
         "describes 2.54e+13 parameters, but the file holds only"),
        ("a DeepSpeed config 100,000 objects deep", train + ["--deepspeed-config", deep_json], "nests deeper than 64 levels"),
        ("--config with a key 100,000 levels deep", train + ["--config", deep_keys], "line 1 nests keys or values deeper than 64 levels"),
        ("--config with arrays 100,000 levels deep", train + ["--config", deep_arrays], "line 1 nests keys or values deeper than 64 levels"),
        ("config claiming 2e9 layers", eval_ + ["--weights", huge_layers], "2000000000 layers, hidden 32, vocab 256, context 16) describes 2.54e+13 parameters, but the file holds only 85888 bytes"),
        ("header length off by one", eval_ + ["--weights", off_by_one], "trailing bytes mean a corrupt header length"),
        ("trailing garbage", eval_ + ["--weights", trailing], "the tensors end at byte"),
        ("a NaN weight", eval_ + ["--weights", nan_weights], f"tensor '{name}' holds nan at element 0"),
        ("one shard of a sharded save, alone", eval_ + ["--weights", one_shard],
         "model-00002-of-00003.safetensors' is one shard of a sharded checkpoint"),
        ("eval --batch 100000 in 1.5 GB", limited + [SHARDLAB, "eval", "--weights", weights, "--data", big_text, "--batch", "100000"],
         "out of host memory allocating 204800000 bytes; make the job smaller: a smaller batch (train's --micro-batch, eval's --batch)"),
        ("init --out ''", [SHARDLAB, "init", "--preset", "tiny", "--out", ""],
         "--out: an empty path; give a .safetensors file or a folder"),
        ("a shard with a corrupted magic", [SHARDLAB, "eval", "--weights", weights, "--data", shard], "whose magic is 20240521, not 20240520"),
        ("eval --batch 100000000 on 12 KB", [SHARDLAB, "eval", "--weights", weights, "--data", small_text, "--batch", "100000000"],
         "--batch 100000000 is more than the"),
        ("missing weights file", eval_ + ["--weights", os.path.join(tmp, "none.safetensors")], "none.safetensors"),
        # A directory is a Hugging Face folder now; one that cannot be created is refused up front.
        ("--save-weights a folder under a file", [SHARDLAB, "train", *SMALL, "--out", os.path.join(tmp, "new1"),
                                                  "--save-weights", os.path.join(bad_toml, "hf") + "/"],
         "cannot create a file in"),
        ("--save-weights in a missing directory", [SHARDLAB, "train", *SMALL, "--out", os.path.join(tmp, "new2"),
                                                   "--save-weights", os.path.join(tmp, "no", "such", "w.safetensors")],
         "cannot create a file in"),
        ("--out not writable", [SHARDLAB, "train", *SMALL, "--out", "/proc/shardlab-out"], "is not a writable directory"),
        ("plan --sweep-ranks 1,2x", [SHARDLAB, "plan", "--preset", "gpt2", "--sweep-ranks", "1,2x"], "'2x' is not a rank count"),
        ("a tensor name without a layer number", eval_ + ["--weights", odd_name], "has no model config and hidden size 32 is not a multiple of 64"),
        ("resume on other data", train + ["--resume", run, "--data", small_text], "was trained on other data than"),
        # Once a 0-step report replaced the run's; a changed kernel or --reproducible resumed
        # silently, not bit for bit.
        ("resume of a finished run", train + ["--resume", run], "is at step 2 of 2: the run is complete, nothing to resume"),
        ("resume with another attention kernel", train + ["--resume", run, "--attention", "materialize"],
         'was written with attention = "flash", this run has "materialize"; resume with --attention flash'),
        ("resume with another --min-lr-ratio", train + ["--resume", run, "--min-lr-ratio", "0.5"],
         "was written with min_lr_ratio = 0.10000000149011612, this run has 0.5; resume with --min-lr-ratio 0.1"),
        ("resume adding --reproducible", train + ["--resume", run, "--reproducible"],
         "was written with reproducible = false, this run has true; resume without --reproducible"),
        # Every difference in one message (they were named one resume at a time).
        ("resume with two other settings", train + ["--resume", run, "--min-lr-ratio", "0.5", "--attention", "materialize"],
         "this run differs from its checkpoint in 2 settings:\n  checkpoint"),
        # Both give the starting weights; --init was ignored silently.
        ("resume with --init", train + ["--resume", run, "--init", os.path.join(tmp, "w.safetensors")],
         "both give the run's weights, and a resume takes them from its checkpoint; drop --init"),
        # Once a window index before the data (its bytes read as tokens), under ASan a heap overflow.
        ("reference grads --start -1", [SHARDLAB, "reference", "grads", "--weights", weights, "--data", small_text,
                                        "--start", "-1", "--out", os.path.join(tmp, "g.safetensors")],
         "--start: -1 is below 0; use 0 or more"),
        ("reference grads past the data", [SHARDLAB, "reference", "grads", "--weights", weights, "--data", small_text,
                                           "--start", "100000", "--out", os.path.join(tmp, "g.safetensors")],
         "--start 100000 --batch 4 asks for windows 100000..100003, but"),
        # The standard library's own messages said only "std::bad_alloc" or "max_size()".
        ("bench attention past 1.5 GB", limited + [SHARDLAB, "bench", "attention", "--seq-len", "100000", "--batch", "1",
                                                   "--heads", "1", "--head-dim", "64"],
         "out of host memory: this needs more memory than the machine has free; make it smaller"),
        ("plan of a shape past 1e15 parameters", [SHARDLAB, "plan", "--arch", "gpt2", "--hidden", "2147483647", "--heads", "1",
                                                  "--layers", "1", "--vocab", "1", "--seq", "1"],
         "this shape has 5.53e+19 parameters, more than the 1e15 shardlab plans for"),
        ("bench step --seq-len past the context", [SHARDLAB, "bench", "step", *SMALL[:6], "--seq", "16", "--seq-len", "64"],
         "--seq-len 64 is outside 1..16 (the model's context, --seq); use --seq-len <= 16"),
        # 51.5 billion parameters, 0.8 TB of model states: more than any CI machine has; once a
        # run grew until the kernel's OOM killer ended it.
        ("a run larger than the node's memory", [SHARDLAB, "train", "--layers", "64", "--hidden", "8192", "--heads", "64",
                                                 "--vocab", "256", "--seq", "16", "--steps", "1", "--out", os.path.join(tmp, "new9")],
         "GB of host memory on a node (1 rank(s) x"),
        ("bench adamw --params nan", [SHARDLAB, "bench", "adamw", "--params", "nan"], "--params: nan is not in [1, 4e+09]"),
        ("bench attention --seq-len 0", [SHARDLAB, "bench", "attention", "--seq-len", "0"], "--seq-len: 0 is below 1; use 1 or more"),
        ("plan --params nan", [SHARDLAB, "plan", "--params", "nan"], "--params: nan is not in [1, 1e+15]"),
        ("plan --params -5", [SHARDLAB, "plan", "--params", "-5"], "--params: -5 is not in [1, 1e+15]"),
        ("plan --ranks 0", [SHARDLAB, "plan", "--preset", "gpt2", "--ranks", "0"], "--ranks: 0 is below 1; use 1 or more"),
        ("negative collective timeout", train + ["--collective-timeout", "-1"], "--collective-timeout: -1 is not 0 or in [1, 1e+09]; use 0 (wait forever)"),
        ("collective timeout below a sane floor", train + ["--collective-timeout", "0.001"], "--collective-timeout: 0.001 is not 0 or in [1, 1e+09]"),
        # An MPMD launch whose ranks differ: ZeRO-0's replicas drifted apart silently, another
        # shape hung until the collective timeout.
        ("ranks started with other settings", MPIRUN + ["-np", "1", SHARDLAB, "train", *SMALL, "--out", os.path.join(tmp, "new8"), ":",
                                                        "-np", "1", SHARDLAB, "train", *SMALL, "--out", os.path.join(tmp, "new8"), "--lr", "0.5"],
         "rank 1 was started with other settings than rank 0: lr is 0.5 there"),
        ("resume at another global batch", MPIRUN + ["-np", "2"] + train + ["--resume", run], "was trained with a global batch of"),
        ("checkpoint export of a meta.json claiming 2e9 layers", [SHARDLAB, "checkpoint", "export", huge_ckpt, "--out", os.path.join(tmp, "x.safetensors")],
         "describes a model of 2.54e+13 parameters, but its rank files hold only"),
        ("checkpoint inspect of it", [SHARDLAB, "checkpoint", "inspect", huge_ckpt], "describes a model of 2.54e+13 parameters"),
        ("checkpoint inspect of a meta.json with \"ranks\": \"1\"", [SHARDLAB, "checkpoint", "inspect", typed_ckpt],
         "typed_ckpt/meta.json': \"ranks\" is string \"1\", not an integer; it is corrupt"),
        ("checkpoint inspect of a rank file cut in half", [SHARDLAB, "checkpoint", "inspect", cut_ckpt],
         "a rank file is truncated (rank-0.bin "),
        ("--resume of a file", train + ["--resume", small_text],
         "small.txt is a file; give the run's --out directory (it holds checkpoint/)"),
        ("checkpoint inspect without a checkpoint", [SHARDLAB, "checkpoint", "inspect", config_dir], "no checkpoint in"),
        ("collectives show --ranks-per-node -1", [SHARDLAB, "collectives", "show", "--op", "allreduce", "--ranks-per-node", "-1"],
         "--ranks-per-node: -1 is below 0; use 0 or more"),
        ("collectives bench --ranks-per-node -1", [SHARDLAB, "collectives", "bench", "--ranks-per-node", "-1"],
         "--ranks-per-node: -1 is below 0; use 0 or more"),
        ("calibrate --ranks-per-node -1", [SHARDLAB, "calibrate", "--ranks-per-node", "-1"],
         "--ranks-per-node: -1 is below 0; use 0 or more"),
        ("collectives show --count -1", [SHARDLAB, "collectives", "show", "--op", "allreduce", "--count", "-1"],
         "--count: -1 is below 0; use 0 or more"),
        ("collectives bench -b 1 (below one fp32 element)", [SHARDLAB, "collectives", "bench", "-b", "1", "-e", "64"],
         "-b 1 is smaller than one fp32 element (4 B); the sweep measures whole elements: give -b 4 or more"),
        # --json checked before the sweep (it was found unwritable only after the whole sweep).
        ("collectives bench --json in a missing folder", [SHARDLAB, "collectives", "bench", "--json", "/nonexistent-dir/rows.json"],
         "--json /nonexistent-dir/rows.json: /nonexistent-dir is not a directory"),
        ("collectives bench -b 1 --dtype bf16", [SHARDLAB, "collectives", "bench", "-b", "1", "-e", "64", "--dtype", "bf16"],
         "-b 1 is smaller than one bf16 element (2 B)"),
        # Names checked as the flags are parsed: one message on 3 ranks, not 3 and an MPI_Abort.
        ("collectives show --op bogus, 3 ranks", MPIRUN + ["-np", "3", SHARDLAB, "collectives", "show", "--op", "bogus"],
         "--op: unknown collective 'bogus'; use one of allgather, reduce_scatter"),
        ("collectives show --algo bogus, 3 ranks", MPIRUN + ["-np", "3", SHARDLAB, "collectives", "show", "--op", "allreduce", "--algo", "bogus"],
         "--algo: unknown algorithm 'bogus'; use ring, hd, hier or native"),
        ("collectives bench --algo ring,bogus, 3 ranks", MPIRUN + ["-np", "3", SHARDLAB, "collectives", "bench", "--algo", "ring,bogus"],
         "--algo: unknown algorithm 'bogus'; use ring, hd, hier or native"),
        ("collectives bench --dtype fp64, 3 ranks", MPIRUN + ["-np", "3", SHARDLAB, "collectives", "bench", "--dtype", "fp64"],
         "--dtype: unknown dtype 'fp64'; use one of fp32, bf16, fp16"),
        ("collectives bench --root -1, 3 ranks", MPIRUN + ["-np", "3", SHARDLAB, "collectives", "bench", "--root", "-1"],
         "--root: -1 is below 0; use 0 or more"),
    ]
    # Cases whose message must appear exactly once, and no MPI_Abort banner.
    once = {what for what, _, _ in cases if ", 3 ranks" in what}
    # Running out of memory is no usage error (exit 1), though its message names the flags to change.
    exit_code = {"eval --batch 100000 in 1.5 GB": 1, "bench attention past 1.5 GB": 1}
    before = snapshot(run)
    failures = 0
    for what, cmd, text in cases:
        start = time.monotonic()
        with tempfile.TemporaryFile() as captured:
            p = subprocess.Popen(cmd, stdout=captured, stderr=subprocess.STDOUT)
            hang = threading.Timer(60, p.kill)
            hang.start()
            _, status, usage = os.wait4(p.pid, 0)  # the usage of this case's processes alone
            hang.cancel()
            p.returncode = os.waitstatus_to_exitcode(status)
            captured.seek(0)
            out = captured.read().decode(errors="replace")
        seconds = time.monotonic() - start
        rss_mb = usage.ru_maxrss / 1024  # Linux reports KB: the largest of the processes
        problems = []
        if p.returncode != exit_code.get(what, 2):
            problems.append(f"exit {p.returncode}, not {exit_code.get(what, 2)}")
        if text not in out:
            problems.append(f"no '{text}' in the output")
        if what in once and (out.count(text) != 1 or "MPI_ABORT" in out):
            problems.append(f"'{text}' {out.count(text)} times, not once without MPI_ABORT")
        if seconds >= 5:
            problems.append(f"took {seconds:.1f} s")
        if rss_mb >= 1024:
            problems.append(f"one of its processes held {rss_mb:.0f} MB")
        if snapshot(run) != before:
            problems.append("the run directory changed")
        if problems:
            failures += 1
            print(f"FAIL {what}: {'; '.join(problems)}\n  {' '.join(cmd)}\n  {out.strip()[:400]}")
        else:
            print(f"ok   {what} ({seconds:.1f} s, {rss_mb:.0f} MB)")
    sys.exit(1 if failures else 0)
