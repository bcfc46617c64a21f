#!/usr/bin/env python3
"""What a user watches during `shardlab train`: the --trace file and the progress lines.

1. ZeRO-3 + --prefetch 1 + --offload on 2 ranks with --trace: one process per rank with its
   compute, comm, copy and host tracks; spans on every track nest (no two partly overlap); every
   collective span carries its bytes (split by link class: the ranks are declared 2 nodes), its
   group ("world") and a sequence number rising by one per call; memory counters
   for every category; exactly the --trace-steps steps after the first are traced; and the
   prefetched AllGathers run while the compute stream computes (comm spans overlap op spans); a
   directory given as the trace file is refused up front. The same run of a Llama (GQA 4:2,
   untied head) gives a trace of the same structure whose ops are the Llama's, each as many
   times as its layers call it (RMSNorm, RoPE, SwiGLU, flash attention naming its KV heads) and
   none of GPT-2's, under the same "block l forward/backward" spans as GPT-2's. It also logs
   --log-memory: every step's row holds both ranks' memory.
2. Progress, not on a terminal: log lines exactly at the first step, every --log-every K steps,
   every validation and the last step — and the default K gives about 20 lines per run; no
   terminal control characters.
3. On a terminal (a pseudo-terminal from `script`): the status line with its ETA.
Usage: trace_progress_check.py SHARDLAB MPIRUN [MPIRUN ARGS...]"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

shardlab, mpirun = sys.argv[1], sys.argv[2:]
tiny = ["--layers", "2", "--hidden", "64", "--heads", "2", "--seq", "32", "--micro-batch", "2",
        "--threads", "1"]
# Ops long enough (milliseconds) that a woken comm thread gets a core while they run, even on a
# loaded 2-core machine.
larger = ["--layers", "2", "--hidden", "256", "--heads", "4", "--seq", "128", "--micro-batch", "4",
          "--threads", "1"]
larger_llama = ["--arch", "llama", "--kv-heads", "2", "--ffn", "512", *larger]
work = tempfile.mkdtemp()


def train(np, *args, model=tiny):
    cmd = mpirun + ["-np", str(np), shardlab, "train", *model, *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, f"{' '.join(cmd)}\n{p.stdout}\n{p.stderr}"
    return p.stdout


def logged_steps(out):
    return [int(line.split()[1].split("/")[0]) for line in out.splitlines() if line.startswith("step ")]


def check_trace(trace_path, label):
    """Part 1's structure of a trace of steps 2-4 of ZeRO-3 + --prefetch 1 + --offload on 2 ranks
    declared 2 nodes. Returns its spans."""
    events = json.load(open(trace_path))["traceEvents"]
    tracks = {(e["pid"], e["args"]["name"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    for rank in (0, 1):
        for t in ("compute", "comm", "copy", "host"):
            assert (rank, t) in tracks, f"{label}: rank {rank} has no {t} track: {sorted(tracks)}"
    spans = [e for e in events if e["ph"] == "X"]
    by_track = {}
    for e in spans:
        assert e["dur"] >= 0, e
        by_track.setdefault((e["pid"], e["tid"]), []).append(e)
    for key, track in by_track.items():  # nesting: a span starting inside another ends inside it
        stack = []
        for e in sorted(track, key=lambda e: (e["ts"], -e["dur"])):
            # 1e-3 us: the rounding of ts + dur in microseconds, not time (one stream's events are
            # in order by construction).
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"] + 1e-3:
                stack.pop()
            if stack:
                outer = stack[-1]
                assert e["ts"] + e["dur"] <= outer["ts"] + outer["dur"] + 1e-3, f"{label} {key}: {e['name']} overlaps {outer['name']}"
            stack.append(e)
    for rank in (0, 1):
        steps = sorted(e["name"] for e in spans if e["pid"] == rank and e["cat"] == "step" and e["name"].startswith("step "))
        assert steps == ["step 2", "step 3", "step 4"], (label, steps)
        coll = sorted((e for e in spans if e["pid"] == rank and e["cat"] == "collective"), key=lambda e: e["args"]["seq"])
        seqs = [e["args"]["seq"] for e in coll]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), (label, seqs)
        gathers = [e for e in coll if e["args"]["op"] == "allgather"]
        assert gathers and all(e["args"]["bytes"] > 0 and e["args"]["bytes_sent"] > 0 for e in gathers), label
        # Each span names its group and splits its bytes by link class: 2 nodes of 1 rank, so
        # all of them crossed nodes.
        assert all(e["args"]["group"] == "world" and e["args"]["intra_node_bytes"] == 0 and
                   e["args"]["inter_node_bytes"] == e["args"]["bytes_sent"] for e in coll), (label, coll[0])
        ops = [e for e in spans if e["pid"] == rank and e["cat"] == "op"]
        overlap = sum(max(0.0, min(g["ts"] + g["dur"], o["ts"] + o["dur"]) - max(g["ts"], o["ts"]))
                      for g in gathers for o in ops)
        assert overlap > 0, f"{label} rank {rank}: no AllGather ran while an op computed"
        counters = [e for e in events if e["ph"] == "C" and e["pid"] == rank]
        names = {e["name"] for e in counters}
        assert names == {"device memory (MB)", "host memory (MB)"}, (label, names)
        assert all(set(e["args"]) == {"params", "grads", "master", "optimizer", "activations",
                                      "comm_buffers", "workspace"} for e in counters), label
        host = [e for e in spans if e["pid"] == rank and e["name"] == "AdamW tile"]
        copies = [e for e in spans if e["pid"] == rank and e["cat"] == "copy"]
        assert host and copies, f"{label}: offload: no host updates or copies traced"
    print(f"ok 1: {label} trace: {len(spans)} spans on {len(by_track)} tracks nest; AllGathers overlap compute")
    return spans


def check_llama_ops(spans, layers, hidden, heads, kv_heads, ffn, batch, seq, micro_batches):
    """The Llama's own ops, by name, as many as its layers run in 3 traced steps of
    `micro_batches` forward + backward each (no checkpointing): RMSNorm twice a layer and once
    before the head, RoPE on q and k together, SwiGLU, flash attention with the grouped heads
    named; with their shapes (the fused q | k | v row is (heads + 2 kv_heads) head dims wide, not
    3 hidden); none of GPT-2's (layer norm, GELU, biases); the model's spans name Llama layers."""
    rows, qkv = batch * seq, hidden // heads * (heads + 2 * kv_heads)
    shapes = {"rmsnorm_forward": ("in", [rows, hidden]), "rope_forward": ("x", [rows, qkv]),
              "swiglu_forward": ("gate", [rows, ffn]),
              "flash_attention_forward": ("qkv", [batch, seq, qkv])}
    n = 3 * micro_batches
    want = {"rmsnorm_forward": (2 * layers + 1) * n, "rmsnorm_backward": (2 * layers + 1) * n,
            "rope_forward": layers * n, "rope_backward": layers * n,
            "swiglu_forward": layers * n, "swiglu_backward": layers * n,
            "flash_attention_forward": layers * n, "flash_attention_backward": layers * n,
            "embedding_forward": n, "embedding_backward": n}
    gpt2_only = {"layernorm_forward", "residual_layernorm_forward", "layernorm_backward",
                 "gelu_forward", "gelu_backward", "linear_gelu_forward", "linear_gelu_backward",
                 "bias_grad", "attention_forward", "attention_backward"}
    for rank in (0, 1):
        ops = [e for e in spans if e["pid"] == rank and e["cat"] == "op"]
        count = {name: sum(1 for e in ops if e["name"] == name) for name in want}
        assert count == want, f"llama rank {rank}: ops {count}, want {want}"
        assert not gpt2_only & {e["name"] for e in ops}, sorted(gpt2_only & {e["name"] for e in ops})
        attention = [e for e in ops if e["name"].startswith("flash_attention")]
        assert all(e["args"]["heads"] == heads and e["args"]["kv_heads"] == kv_heads for e in attention), attention[0]
        for name, (arg, shape) in shapes.items():  # e.g. "[512, 512] bf16"
            got = {e["args"][arg] for e in ops if e["name"] == name}
            assert got == {f"{shape} bf16"}, (name, got, shape)
        model = {e["name"] for e in spans if e["pid"] == rank and e["cat"] == "model"}
        block_spans = {f"block {i} {d}" for i in range(layers) for d in ("forward", "backward")}
        assert block_spans <= model and not any(m.startswith("layer ") for m in model), sorted(model)
    print(f"ok 1: llama trace: per rank {', '.join(f'{k} {v}' for k, v in want.items())}; "
          f"attention {heads} heads over {kv_heads} KV heads, q | k | v {qkv} wide")


try:
    # 1. The trace, of a GPT-2 and of a Llama (GQA 4:2, untied head).
    trace_path = os.path.join(work, "trace.json")
    traced = ["--zero", "3", "--prefetch", "1", "--offload", "--steps", "5", "--ranks-per-node", "1",
              "--trace-steps", "3"]
    out = train(2, *traced, "--log-every", "2", "--trace", trace_path, "--out",
                os.path.join(work, "a"), model=larger)
    assert "trace of steps 2-4: " in out, out
    check_trace(trace_path, "gpt2")
    llama_path = os.path.join(work, "llama.json")
    train(2, *traced, "--val-every", "0", "--trace", llama_path, "--out", os.path.join(work, "l"),
          "--log-memory", model=larger_llama)
    # --log-memory's samples, a watched gather beside the trace's: both ranks in every step's row.
    rows = [json.loads(l) for l in open(os.path.join(work, "l", "steps.jsonl"))]
    assert [r["step"] for r in rows] == [1, 2, 3, 4, 5], rows
    assert all(len(r["memory"]["rss"]) == 2 and len(r["memory"]["tracked"]) == 2 for r in rows), rows
    check_llama_ops(check_trace(llama_path, "llama"), layers=2, hidden=256, heads=4, kv_heads=2,
                    ffn=512, batch=4, seq=128, micro_batches=1)
    # A directory is not a trace file: refused before step 1, not after the run.
    p = subprocess.run([shardlab, "train", *tiny, "--steps", "1", "--trace", work, "--out",
                        os.path.join(work, "d")], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "is a directory; give a file name" in p.stderr, (p.returncode, p.stderr)

    # 2. Progress lines, not a terminal.
    assert logged_steps(out) == [1, 2, 4, 5], out
    out = train(1, "--steps", "40", "--val-every", "15", "--out", os.path.join(work, "b"))
    want = sorted({1, 15, 30, 40} | set(range(2, 41, 2)))
    assert logged_steps(out) == want, (logged_steps(out), want)
    assert "\r" not in out and "\033" not in out, "control characters in a non-terminal log"
    print(f"ok 2: {len(want)} log lines for 40 steps (default every 2, validations, first, last)")

    # 3. On a terminal.
    if shutil.which("script"):
        cmd = " ".join([shardlab, "train", *tiny, "--steps", "3", "--out", os.path.join(work, "c")])
        p = subprocess.run(["script", "-qec", cmd, "/dev/null"], capture_output=True, timeout=120)
        assert p.returncode == 0, p.stdout
        assert b"\r\033[Kstep 1/3 | loss" in p.stdout and b"| ETA " in p.stdout, p.stdout[:2000]
        print("ok 3: on a terminal, a status line with its ETA")
finally:
    shutil.rmtree(work, ignore_errors=True)
