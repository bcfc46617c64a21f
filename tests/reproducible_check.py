#!/usr/bin/env python3
"""--reproducible (issue 23): one global batch of 12 sequences gives the same bits at any rank
count, stage, offload, activation checkpointing, split of the batch (micro-batch x grad-accum x N)
and hybrid layout — the final weights' hash, every step's loss, gradient norm and validation loss
equal, bit for bit, to the 1-rank run's — and a checkpoint saved at N resumes at M bitwise
(4 -> 3, 2 -> 6). The same for a Llama (GQA 4:2, untied head, bf16): 1, 2 and 3 ranks, and
3 -> 2. Validation over 61 windows, which 2 and 3 ranks at ZeRO-3 share unevenly, gives the
1-rank run's bits too. Mode `cuda`: the same on the CUDA backend under the emulator (1, 2 and 4
ranks, bf16, each rank its own emulated GPU; a Llama at 1 and 2; label cuda, so CI runs it under
ASan too). Every run's memory and bytes equal the plan's (int64 reductions, the int64 sums,
micro-batch-1 activations).
Without --reproducible, N = 1 and N = 2 differ (the check would mean nothing otherwise).
Usage: reproducible_check.py cpu|cuda SHARDLAB MPIRUN [MPIRUN ARGS...]"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from report_expect import TINY_LLAMA_MODEL, TINY_MODEL, measured_equals_predicted

MODE, SHARDLAB, MPIRUN = sys.argv[1], sys.argv[2], sys.argv[3:]
# The emulator runs kernels a thread at a time: a smaller model there (1 block, d = 32), 2 steps.
MODEL = TINY_MODEL if MODE == "cpu" else ["--layers", "1", "--hidden", "32", "--heads", "2",
                                           "--seq", "16", "--vocab", "256"]
# Its Llama (GQA, untied head): the same contract through RMSNorm, RoPE and SwiGLU.
LLAMA = TINY_LLAMA_MODEL if MODE == "cpu" else [
    "--arch", "llama", "--layers", "1", "--hidden", "32", "--heads", "2", "--kv-heads", "1",
    "--ffn", "48", "--seq", "16", "--vocab", "256"]
COMMON = ["--steps", "3" if MODE == "cpu" else "2", "--lr", "3e-3", "--warmup", "1",
          "--val-every", "1", "--val-batches", "1", "--quiet"]
failures = []


def check(cond, what, quiet=False):
    if not cond:
        failures.append(what)
    if not cond or not quiet:
        print(("ok: " if cond else "FAIL: ") + what)


def check_quietly(cond, what):
    check(cond, what, quiet=True)


def train(n, out, flags, env=None, reproducible=True, model=MODEL):
    cmd = MPIRUN + ["-np", str(n), SHARDLAB, "train", *model, *COMMON, "--out", out, *flags]
    if reproducible:
        cmd.append("--reproducible")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, **(env or {})))
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    rep = json.load(open(os.path.join(out, "report.json")))
    for rank in rep["ranks"]:
        measured_equals_predicted(check_quietly, os.path.basename(out), rank)
    steps = [(s["loss"], s["grad_norm"], s.get("val_loss")) for s in rep["steps"]]
    return rep["final_params_sha256"], steps


def same(name, got, ref):
    check(got == ref, f"{name}: hash {got[0][:12]} and every loss, norm and validation loss "
                      f"bitwise equal to the 1-rank run's" if got == ref else
          f"{name}: {got} differs from the 1-rank run's {ref}")


# (name, ranks, flags); the first of each precision is the reference. Global batch 12 always.
CPU_RUNS = {
    "fp32": [("n1", 1, ["--micro-batch", "12"]),
             ("n2-zero1-mb2x3", 2, ["--zero", "1", "--micro-batch", "2", "--grad-accum", "3"]),
             ("n3-zero2-ckall", 3, ["--zero", "2", "--micro-batch", "4", "--checkpoint", "all"]),
             ("n4-zero3-prefetch1-mb1x3", 4, ["--zero", "3", "--prefetch", "1",
                                              "--micro-batch", "1", "--grad-accum", "3"]),
             ("n6-zero3-offload", 6, ["--zero", "3", "--offload", "--micro-batch", "2"]),
             ("n4-zero3-hybrid2x2", 4, ["--zero", "3", "--shard-group", "2",
                                        "--micro-batch", "3"])],
    "bf16": [("n1-mb6x2", 1, ["--micro-batch", "6", "--grad-accum", "2"]),
             ("n2-zero3-offload", 2, ["--zero", "3", "--offload", "--micro-batch", "6"]),
             ("n3-zero1-ckall-mb2x2", 3, ["--zero", "1", "--checkpoint", "all",
                                          "--micro-batch", "2", "--grad-accum", "2"]),
             ("n4-zero2", 4, ["--zero", "2", "--micro-batch", "3"]),
             ("n6-zero0-mb1x2", 6, ["--micro-batch", "1", "--grad-accum", "2"]),
             ("n4-zero1-hybrid2x2-offload", 4, ["--zero", "1", "--shard-group", "2", "--offload",
                                                "--micro-batch", "3"])],
}


# The Llama (bf16), the first run the reference: 1, 2 and 3 ranks across stages, offload,
# checkpointing and splits; resumed 3 -> 2 below.
LLAMA_RUNS = [("n1", 1, ["--micro-batch", "12"]),
              ("n2-zero3-offload-mb2x3", 2, ["--zero", "3", "--offload", "--micro-batch", "2",
                                             "--grad-accum", "3"]),
              ("n3-zero1-ckall", 3, ["--zero", "1", "--checkpoint", "all", "--micro-batch", "4"])]


def resumed_at_another_n(p, name, ref, first, then, stop, model=MODEL):
    """Train `first` = (N, flags) to step `stop` (its checkpoint), resume at `then` = (M, flags):
    the final hash and the resumed steps bitwise the uninterrupted `ref`'s."""
    out = p("resume-" + name.replace(" ", "").replace(">", ""))
    train(first[0], out, ["--precision", "bf16", "--stop-after", str(stop), *first[1]], model=model)
    h, steps = train(then[0], out, ["--precision", "bf16", "--resume", out, *then[1]], model=model)
    check(h == ref[0] and steps == ref[1][stop:],
          f"resume {name} after step {stop}: final hash and the resumed steps' losses bitwise "
          f"equal to the uninterrupted run ({h[:12]})")


def cpu_checks(p):
    refs = {}
    for precision, runs in CPU_RUNS.items():
        for i, (name, n, flags) in enumerate(runs):
            got = train(n, p(f"{precision}-{name}"), ["--precision", precision, *flags])
            if i == 0:
                refs[precision] = got
                print(f"ok: {precision} reference (1 rank): hash {got[0][:12]}")
            else:
                same(f"{precision} {name}", got, refs[precision])

    # Resume at another rank count: 4 -> 3 and 2 -> 6, against the uninterrupted bf16 run.
    resumed_at_another_n(p, "4 -> 3", refs["bf16"], (4, ["--zero", "3", "--micro-batch", "3"]),
                         (3, ["--zero", "2", "--micro-batch", "2", "--grad-accum", "2"]), 2)
    resumed_at_another_n(p, "2 -> 6", refs["bf16"], (2, ["--zero", "1", "--micro-batch", "6"]),
                         (6, ["--zero", "3", "--micro-batch", "2"]), 1)

    # The Llama: the same bits at 1, 2 and 3 ranks, and across a resume 3 -> 2.
    for i, (name, n, flags) in enumerate(LLAMA_RUNS):
        got = train(n, p(f"llama-{name}"), ["--precision", "bf16", *flags], model=LLAMA)
        if i == 0:
            llama_ref = got
            print(f"ok: llama bf16 reference (1 rank): hash {got[0][:12]}")
        else:
            same(f"llama bf16 {name}", got, llama_ref)
    resumed_at_another_n(p, "llama 3 -> 2", llama_ref, (3, ["--zero", "2", "--micro-batch", "4"]),
                         (2, ["--zero", "3", "--offload", "--micro-batch", "6"]), 1, model=LLAMA)

    # Validation windows that no rank count here divides: 20,130 bytes of text keep 2,013 for
    # validation, 61 windows of 33 tokens, so 2 and 3 ranks validate uneven shares (30/31,
    # 20/20/21). At ZeRO-3 every forward gathers every unit, so the shorter shares must run as
    # many forwards as the longest (they once parted ways: a watchdog's schedule mismatch).
    data = p("uneven.txt")
    with open(data, "w") as f:
        f.write("".join(f"line {i}: the quick brown fox {i * 7919 % 1000}\n" for i in range(700))[:20130])
    uneven = ["--data", data, "--val-batches", "6", "--precision", "fp32"]
    ref = train(1, p("uneven-n1"), uneven + ["--micro-batch", "12"])
    for name, n, flags in (("n2-zero3", 2, ["--zero", "3", "--micro-batch", "6"]),
                           ("n3-zero3-prefetch1", 3, ["--zero", "3", "--prefetch", "1",
                                                      "--micro-batch", "4"])):
        same(f"61 validation windows, {name}", train(n, p(f"uneven-{name}"), uneven + flags), ref)

    # The default is not rank-count independent: the same 1- and 2-rank runs differ.
    a = train(1, p("default-n1"), ["--precision", "fp32", "--micro-batch", "12"],
              reproducible=False)
    b = train(2, p("default-n2"), ["--precision", "fp32", "--micro-batch", "6"],
              reproducible=False)
    check(a[0] != b[0], "without --reproducible, 1 and 2 ranks end with other weights "
                        f"({a[0][:12]} / {b[0][:12]})")

    # The report states the cost: the plan's bytes without --reproducible are what the default
    # run measured, rank by rank (the fp32 2-rank run above, the same flags otherwise).
    train(2, p("cost-n2"), ["--precision", "fp32", "--micro-batch", "6"])
    plain = json.load(open(os.path.join(p("default-n2"), "report.json")))
    exact = json.load(open(os.path.join(p("cost-n2"), "report.json")))
    steps = len(plain["steps"])
    for d, e in zip(plain["ranks"], exact["ranks"]):
        sent = sum(op["bytes_sent"] for op in d["comm"].values())
        cost = e["reproducible_cost"]
        check(cost["default_bytes_per_step"] * steps == sent and cost["bytes_ratio"] > 1,
              f"rank {e['rank']}: the report's cost — {cost['bytes_ratio']:.2f}x the bytes, "
              f"{cost['memory_ratio']:.2f}x the memory — stands on the default's "
              f"{cost['default_bytes_per_step']} B a step, as the default run measured")


def cuda_checks(p):
    """1, 2 and 4 ranks on the CUDA backend (the emulator), each rank its own emulated GPU."""
    cuda = []
    for n, flags in ((1, ["--micro-batch", "12"]), (2, ["--zero", "3", "--micro-batch", "6"]),
                     (4, ["--zero", "2", "--offload", "--micro-batch", "1", "--grad-accum",
                          "3"])):
        cuda.append(train(n, p(f"cuda-n{n}"), ["--device", "cuda", "--precision", "bf16", *flags],
                          env={"SHARDLAB_EMU_GPUS": str(n)}))
    check(cuda[1] == cuda[0] and cuda[2] == cuda[0],
          f"--device cuda (emulator): 1, 2 and 4 ranks bitwise equal ({cuda[0][0][:12]})")
    # The Llama's kernels (RMSNorm, RoPE, SwiGLU, GQA flash attention) on 1 and 2 ranks.
    llama = [train(n, p(f"cuda-llama-n{n}"), ["--device", "cuda", "--precision", "bf16", *flags],
                   env={"SHARDLAB_EMU_GPUS": str(n)}, model=LLAMA)
             for n, flags in ((1, ["--micro-batch", "12"]),
                              (2, ["--zero", "3", "--offload", "--micro-batch", "2",
                                   "--grad-accum", "3"]))]
    check(llama[1] == llama[0],
          f"--device cuda (emulator): a Llama at 1 and 2 ranks bitwise equal ({llama[0][0][:12]})")


with tempfile.TemporaryDirectory() as tmp:
    (cpu_checks if MODE == "cpu" else cuda_checks)(lambda name: os.path.join(tmp, name))
if failures:
    print(f"{len(failures)} check(s) failed")
sys.exit(1 if failures else 0)
