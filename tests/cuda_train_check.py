#!/usr/bin/env python3
"""`shardlab train --device cuda` end to end on 2 ranks — on the SIMT emulator in CI (each rank its
own emulated GPU, NCCL's stand-in between them), unchanged on a real GPU (label `gpu`):
  1. ZeRO 0/1/2/3 x offload, bf16: bitwise-identical losses and final weights (the contract),
     ZeRO 0 on the plain mma flash kernels, ZeRO 3 with offload on the forms that
     SHARDLAB_CUDA_FLASH=auto picks;
  2. on every rank, measured bytes equal the prediction per memory category and per collective,
     and the offload copies equal theirs;
  3. against `--device cpu` on the same seed and data: bf16 losses within 1e-2 relative and fp32
     within 1e-5 (the numerics contract's bounds, in the team's ../shared/DESIGN.md: the GEMMs
     accumulate in another order, the rest of the kernels match the CPU's bit for bit where their
     order is the same);
  4. two ranks sharing one GPU over the MPI transport (device buffers staged through pinned host
     memory) give the same bits as the NCCL transport: both run the project's ring; and four with
     hpZ (nodes of 2) use the host memory predicted. On a machine with one GPU, parts 1-3 run with
     the ranks sharing it, and part 4 is one rank over NCCL;
  5. under the emulator, its call counts prove that a training step never synchronises the device
     nor makes a blocking copy or an upload from pageable memory (the token ids go through pinned
     staging), and allocates nothing once the caching allocator is warm: runs of 2 and 4 steps make
     the same number of cudaMalloc / cudaFree / blocking calls / pageable uploads, and their
     cudaEventCreate counts differ by less than a tenth of the 2 extra steps' cudaEventRecords
     (events are pooled per stream, core/cuda/event_pool.h; the pool's size follows timing).
Modes for the emulator's CUDA-behaviour tests (emu/stream_model.h), each only its own part:
  emu-shared: part 4's two ranks sharing one GPU — over the MPI transport with ZeRO 0 and with the
     transport auto picks with ZeRO 3, as on the H200 where they hung — under the serial
     host-function model, each within 120 s (CTest emu_hostfn_serial);
  emu-interleave: under SHARDLAB_EMU_STREAMS=interleave:SEED for each seed of SHARDLAB_EMU_SEEDS,
     a run that waits across all three streams (ZeRO 3 with offload) gives the bits it gives in
     issue order (CTest emu_stream_interleave).
Mode `lease` is `gpu` without looking for nvidia-smi (scripts/gpu_lease.sh has; its dry run gives
it the emulator build, one emulated GPU the ranks share). A run that fails or outlasts
CUDA_TRAIN_RUN_TIMEOUT seconds (default 600) is reported and the checks go on with the next one,
so one hanging configuration does not hide the others' results.
Usage: cuda_train_check.py emu|gpu|lease|emu-shared|emu-interleave SHARDLAB MPIRUN [MPIRUN ARGS...]"""
import json
import os
import subprocess
import sys
import tempfile

from report_expect import TINY_MODEL, measured_equals_predicted

MODE = sys.argv[1]
SHARDLAB = sys.argv[2]
MPIRUN = sys.argv[3:]
EMU = MODE.startswith("emu")
# On a real GPU the two ranks share it unless the machine has two (auto: NCCL where it can).
CUDA = ["--device", "cuda"] + ([] if EMU else ["--share-gpu"])
MODEL = TINY_MODEL
# CUDA_TRAIN_QUICK=1 (the lease's dry run on the emulator): a smaller model, 2 steps, ZeRO-0 and
# ZeRO-3 + offload only, bf16 only against the CPU.
QUICK = os.environ.get("CUDA_TRAIN_QUICK") == "1"
if QUICK:
    MODEL = ["--layers", "1", "--hidden", "32", "--heads", "2", "--seq", "16", "--vocab", "256"]
RUN_TIMEOUT = float(os.environ.get("CUDA_TRAIN_RUN_TIMEOUT", "600"))
failures = []


class RunFailed(Exception):
    pass


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(args, out, ranks=2, gpus=2, stats=None, env_extra=None, timeout=RUN_TIMEOUT):
    env = dict(os.environ, **(env_extra or {}))
    if EMU:
        env["SHARDLAB_EMU_GPUS"] = str(gpus)  # how many GPUs each rank's node shows
        if stats:
            env["SHARDLAB_EMU_STATS"] = stats
    cmd = MPIRUN + ["-np", str(ranks), SHARDLAB, "train", *MODEL, "--quiet", "--out", out, *args]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        stdout, stderr = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.terminate()  # SIGTERM: mpirun ends its ranks (a SIGKILL would leave them on the GPU)
        try:
            stdout, stderr = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            stdout, stderr = p.communicate()
        raise RunFailed(f"TIMEOUT after {timeout:g} s: {' '.join(cmd)}\n{stdout}\n{stderr}")
    if p.returncode != 0:
        raise RunFailed(f"FAILED (exit {p.returncode}): {' '.join(cmd)}\n{stdout}\n{stderr}")
    return json.load(open(os.path.join(out, "report.json")))


def losses(rep):
    return [s["loss"] for s in rep["steps"]]


def check_measured_equals_predicted(name, rep):
    for r in rep["ranks"]:
        measured_equals_predicted(check, name, r)
        hd = r["host_device_bytes"]
        check(hd["total"] == hd["predicted"], f"{name} rank {r['rank']}: offload copies {hd}")
        check(r["device"].startswith("cuda:"), f"{name} rank {r['rank']}: device {r['device']}")
        d = r.get("gpu_driver")
        check(d is not None and d["in_use_bytes"] >= d["allocator_reserved_bytes"] > 0,
              f"{name} rank {r['rank']}: GPU driver memory {d}")


def relative_gap(a, b):
    return max(abs(x - y) / abs(y) for x, y in zip(a, b))


def gpu_present():
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    except FileNotFoundError:
        return False


def failed(e):
    check(False, str(e).split("\n")[0])
    print(e)


if MODE == "gpu" and not gpu_present():
    print("skipped: no NVIDIA GPU here (nvidia-smi finds none)")
    sys.exit(77)  # CTest's SKIP_RETURN_CODE

STEPS = ["--micro-batch", "2", "--steps", "2" if QUICK else "4", "--lr", "3e-3", "--warmup", "1" if QUICK else "2"]
BF16 = STEPS + ["--precision", "bf16"]
SHARED = ["--device", "cuda", "--share-gpu"]


def signature(rep):
    return (losses(rep), rep["final_params_sha256"])


def shared_gpu_serial(tmp):
    """The H200's hanging runs, under the host-function model CUDA allows."""
    env = {"SHARDLAB_EMU_HOSTFN": "serial"}
    sigs = {}
    for name, args in (("mpi-zero0", ["--transport", "mpi", "--zero", "0"]),
                       ("auto-zero3", ["--zero", "3"])):
        rep = run(BF16 + SHARED + args + ["--collective-timeout", "100"], os.path.join(tmp, name),
                  gpus=1, env_extra=env, timeout=120)
        check("transport mpi" in rep["ranks"][0]["device"], f"{name}: device {rep['ranks'][0]['device']}")
        check_measured_equals_predicted(name, rep)
        sigs[name] = signature(rep)
        print(f"ok: 2 ranks sharing one GPU, {name}, serial host functions: losses {sigs[name][0]}")
    check(sigs["mpi-zero0"] == sigs["auto-zero3"], f"ZeRO 0 and 3 differ on the shared GPU: {sigs}")


def interleaved(tmp):
    """Runs that order work across the compute, comm and copy streams: the bits of issue order,
    under each seed of SHARDLAB_EMU_SEEDS (default "1 2 3")."""
    # One run keeps it cheap: ZeRO 3 with offload waits across all three streams (gathers and
    # reduce-scatters on comm, the optimizer's copies on copy, the host updater between them).
    runs = (("zero3-offload", BF16 + ["--device", "cuda", "--zero", "3", "--offload"], 2),)
    for name, args, gpus in runs:
        want = signature(run(args, os.path.join(tmp, name + "-issue"), gpus=gpus,
                             env_extra={"SHARDLAB_EMU_STREAMS": "issue"}))
        for seed in os.environ.get("SHARDLAB_EMU_SEEDS", "1 2 3").split():
            streams = f"interleave:{seed}"
            got = signature(run(args, os.path.join(tmp, f"{name}-{seed}"), gpus=gpus,
                                env_extra={"SHARDLAB_EMU_STREAMS": streams}))
            check(got == want, f"{name} under SHARDLAB_EMU_STREAMS={streams}: {got} vs issue order {want}")
            if got == want:
                print(f"ok: {name} under SHARDLAB_EMU_STREAMS={streams}: the bits of issue order")


if MODE in ("emu-shared", "emu-interleave"):
    with tempfile.TemporaryDirectory() as tmp:
        (shared_gpu_serial if MODE == "emu-shared" else interleaved)(tmp)
    sys.exit(1 if failures else 0)

with tempfile.TemporaryDirectory() as tmp:
    steps = STEPS
    bf16 = BF16

    # 1-2. The stages, with and without offload, bitwise alike; every byte as predicted.
    reference = None
    for zero in range(4):
        for offload in (False, True):
            if QUICK and (zero, offload) not in ((0, False), (3, True)):
                continue
            name = f"zero{zero}{'-offload' if offload else ''}"
            # ZeRO 0 runs the plain mma flash kernels and ZeRO 3 with offload the forms auto times,
            # on the emulator (whose default is mma) as on a GPU (whose default is auto): every form
            # gives the same bits.
            flash = ({"SHARDLAB_CUDA_FLASH": "mma"} if (zero, offload) == (0, False) else
                     {"SHARDLAB_CUDA_FLASH": "auto"} if (zero, offload) == (3, True) else None)
            try:
                rep = run(bf16 + CUDA + ["--zero", str(zero)] + (["--offload"] if offload else []),
                          os.path.join(tmp, name), env_extra=flash)
            except RunFailed as e:
                failed(e)
                continue
            sig = (losses(rep), rep["final_params_sha256"])
            # Each rank's report names the flash kernels it ran (hd 16 in bf16: tensor cores, forms).
            asked = (flash or {}).get("SHARDLAB_CUDA_FLASH")
            if asked:
                kernels = [r["attention_kernels"] for r in rep["ranks"]]
                want = "auto: forward " if asked == "auto" else asked
                check(all(k == want or (asked == "auto" and k.startswith(want)) for k in kernels),
                      f"{name}: attention kernels {kernels}, expected {want}")
            if reference is None:
                reference = (name, sig)
            check(sig == reference[1], f"{name}: losses/weights differ from {reference[0]}: {sig} vs {reference[1]}")
            check_measured_equals_predicted(name, rep)
            print(f"{name}: ran, losses {sig[0]}")
    if not failures:
        print(f"ok: ZeRO 0-3 with and without offload on the CUDA backend, bitwise alike: {reference[1][0]}")

    # 3. The CUDA backend against the CPU backend.
    for precision, bound in (("bf16", 1e-2),) + (() if QUICK else (("fp32", 1e-5),)):
        args = steps + ["--precision", precision, "--zero", "3"]
        try:
            cuda = losses(run(args + CUDA, os.path.join(tmp, f"cuda-{precision}")))
            cpu = losses(run(args + ["--device", "cpu"], os.path.join(tmp, f"cpu-{precision}")))
        except RunFailed as e:
            failed(e)
            continue
        gap = relative_gap(cuda, cpu)
        check(gap <= bound, f"{precision}: CUDA losses {cuda} vs CPU {cpu}: relative gap {gap:.2e} > {bound}")
        print(f"ok: {precision} CUDA vs CPU losses within {gap:.1e} (bound {bound})")

    # 4. Two ranks on one GPU over the MPI transport: the same bits as over NCCL.
    try:
        if EMU:
            shared = run(bf16 + CUDA + ["--zero", "3", "--share-gpu", "--transport", "mpi"],
                         os.path.join(tmp, "shared"), gpus=1)
            check(reference is not None and (losses(shared), shared["final_params_sha256"]) == reference[1],
                  f"2 ranks sharing a GPU over MPI: {losses(shared)} vs {reference}")
            check("transport mpi" in shared["ranks"][0]["device"], f"shared GPU device {shared['ranks'][0]['device']}")
            check_measured_equals_predicted("shared-gpu", shared)
            print("ok: two ranks sharing one GPU over the MPI transport: the same bits as over NCCL")
            # hpZ over the staged transport: a regather from the secondary shards is a ring over
            # the node's 2 ranks, whose chunks (half a unit) outgrow the 4-rank reduce-scatter's:
            # the pinned host staging must be predicted from them.
            hpz = run(["--micro-batch", "1", "--steps", "2", "--precision", "bf16", "--zero", "3",
                       "--share-gpu", "--transport", "mpi", "--ranks-per-node", "2",
                       "--secondary-shard", "node"] + CUDA, os.path.join(tmp, "hpz"), ranks=4, gpus=1)
            check_measured_equals_predicted("shared-gpu-hpz", hpz)
            print("ok: hpZ on 4 ranks sharing one GPU over the MPI transport: every byte as predicted, "
                  "the host staging of the node's ring included")
        else:  # one rank over NCCL, against the CPU
            args = bf16 + ["--zero", "3"]
            nccl = run(args + ["--device", "cuda", "--transport", "nccl"], os.path.join(tmp, "nccl"), ranks=1)
            check("transport nccl" in nccl["ranks"][0]["device"], f"device {nccl['ranks'][0]['device']}")
            check_measured_equals_predicted("nccl-1-rank", nccl)
            cpu = losses(run(args + ["--device", "cpu"], os.path.join(tmp, "cpu-1-rank"), ranks=1))
            gap = relative_gap(losses(nccl), cpu)
            check(gap <= 1e-2, f"1 rank over NCCL: {losses(nccl)} vs CPU {cpu}: {gap:.2e}")
            print(f"ok: one rank over NCCL, within {gap:.1e} of the CPU")
    except RunFailed as e:
        failed(e)

    # 5. What a step asks of the device (the emulator counts it).
    if EMU:
        counts = {}
        try:
            for n in (2, 4):
                stats = os.path.join(tmp, f"stats{n}.jsonl")
                run(["--micro-batch", "2", "--steps", str(n), "--zero", "3", "--offload"] + CUDA,
                    os.path.join(tmp, f"count{n}"), stats=stats)
                counts[n] = [json.loads(line) for line in open(stats)]
        except RunFailed as e:
            failed(e)
        for r, (two, four) in enumerate(zip(counts.get(2, []), counts.get(4, []))):
            check(two["device_synchronizations"] == four["device_synchronizations"] == 0,
                  f"rank {r}: cudaDeviceSynchronize called: {two} / {four}")
            for key in ("blocking_copies", "mallocs", "frees", "pageable_uploads"):
                check(two[key] == four[key], f"rank {r}: {key} grow with the steps: {two[key]} -> {four[key]}")
            # The event pool grows to the most events alive at once, which depends on how far the
            # host runs ahead of the device (a loaded machine: a few more; CI once saw 159 -> 165).
            # Without pooling every record would create one: the 2 extra steps' records. So the
            # growth must stay under a tenth of those.
            records = four["event_records"] - two["event_records"]
            grown = four["event_creates"] - two["event_creates"]
            check(records > 0 and grown * 10 < records,
                  f"rank {r}: event_creates grow with the steps: {two['event_creates']} -> "
                  f"{four['event_creates']} over {records} more records")
            check(four["kernel_launches"] > two["kernel_launches"] > 0, f"rank {r}: launches {two} / {four}")
        if len(counts) == 2:
            print(f"ok: steps make no device synchronisation, blocking copy, pageable upload, allocation "
                  f"or event creation: {counts[4]}")
print(f"{len(failures)} failure(s)" if failures else "all checks passed")
sys.exit(1 if failures else 0)
