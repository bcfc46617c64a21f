#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: build the real CUDA backend, run its tests on the GPU, and
# benchmark it — every result into one folder (default gpu_check/), summarised in summary.md.
#   1. build/ with -DSHARDLAB_CUDA=ON (nvcc, cuBLAS, NCCL) into build-gpu/;
#   2. `ctest -L gpu`: the CUDA kernels against the CPU's, and training on the GPU (2 ranks sharing
#      it over the MPI transport, 1 rank over NCCL);
#   3. GPT-2 124M bf16 training step: shardlab's tokens/s and MFU beside PyTorch eager and
#      torch.compile on the same GPU (tools/torch_bench_step.py);
#   4. ZeRO-3 vs ZeRO-0 step time, and offload's overhead, on every GPU of the machine;
#   5. `collectives bench --device cuda`: the project's ring vs NCCL's native collectives.
# Targets (benchmarks, not tests; docs/BENCHMARKS.md): >= 40% MFU and >= 1.2x PyTorch eager;
# ZeRO-3 step <= 1.15x ZeRO-0; offload step <= 1.5x without, at a batch where the update is under
# 10% of the step.
#
# Needs nvidia-smi, nvcc, CMake, Open MPI (mpirun on PATH, or SHARDLAB_MPI_ROOT: a folder where
# Debian's Open MPI packages were unpacked with `dpkg -x`) and, for the peer, PyTorch with CUDA.
# GPU_PEAK_TFLOPS overrides the bf16 dense peak the MFU is taken against (H100 SXM / H200: 989.5).
# Usage: scripts/gpu_check.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-gpu_check}")
mkdir -p "$out"
say() { echo "gpu_check: $*" | tee -a "$out/progress.log"; }

command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 ||
  { echo "gpu_check: no NVIDIA GPU here (nvidia-smi finds none); the CUDA tests run without one under the emulator: scripts/build_emu.sh && (cd build-emu && ctest -L cuda)" >&2; exit 2; }
if [ -n "${SHARDLAB_MPI_ROOT:-}" ]; then # Open MPI unpacked from .deb files: relocate it
  export OPAL_PREFIX=$SHARDLAB_MPI_ROOT/usr
  export PATH=$SHARDLAB_MPI_ROOT/usr/bin:$PATH
  export LD_LIBRARY_PATH=$SHARDLAB_MPI_ROOT/usr/lib/x86_64-linux-gnu:$SHARDLAB_MPI_ROOT/usr/lib/x86_64-linux-gnu/openmpi/lib:${LD_LIBRARY_PATH:-}
  mpi_cmake=(-DMPI_HOME="$SHARDLAB_MPI_ROOT/usr/lib/x86_64-linux-gnu/openmpi" -DMPIEXEC_EXECUTABLE="$SHARDLAB_MPI_ROOT/usr/bin/mpirun")
else
  mpi_cmake=()
fi
command -v mpirun >/dev/null || { echo "gpu_check: no mpirun: install Open MPI, or set SHARDLAB_MPI_ROOT to where its Debian packages were unpacked (dpkg -x)" >&2; exit 2; }
mpirun=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)
gpus=$(nvidia-smi -L | wc -l)
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
nvidia-smi > "$out/nvidia-smi.txt"
say "$gpus x $gpu_name"

say "building build-gpu/ (-DSHARDLAB_CUDA=ON)"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S . -B build-gpu "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DSHARDLAB_CUDA=ON "${mpi_cmake[@]}" > "$out/build.log" 2>&1
cmake --build build-gpu -j "$(nproc)" >> "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
bin=build-gpu/shardlab

say "ctest -L gpu"
status=0
(cd build-gpu && ctest -L gpu --output-on-failure) > "$out/ctest_gpu.log" 2>&1 || status=$?
tail -5 "$out/ctest_gpu.log"

# 3. GPT-2 124M, bf16, 1 rank: shardlab vs PyTorch on the same GPU and shape.
B=${GPU_CHECK_BATCH:-16} T=1024
say "GPT-2 124M bf16 step, micro-batch $B x $T"
"$bin" bench step --device cuda --preset gpt2 --precision bf16 --batch "$B" --seq-len "$T" --steps 10 --warmup 3 --json > "$out/step_shardlab.json"
peer=(python3 tools/torch_bench_step.py --device cuda --layers 12 --hidden 768 --heads 12 --vocab 50257 --seq "$T" --batch "$B" --precision bf16 --threads 1 --steps 10 --warmup 3)
"${peer[@]}" > "$out/step_torch_eager.json" 2> "$out/step_torch_eager.err" || echo '{}' > "$out/step_torch_eager.json"
"${peer[@]}" --compile > "$out/step_torch_compile.json" 2> "$out/step_torch_compile.err" || echo '{}' > "$out/step_torch_compile.json"

# 4. ZeRO-3 vs ZeRO-0, offload vs not: `train` on every GPU (one rank each), steps' median.
ranks=$gpus
train=("${mpirun[@]}" -np "$ranks" "$bin" train --device cuda --preset gpt2 --precision bf16 --seq 1024 --micro-batch 8 --steps 8 --warmup 2 --quiet)
for run in zero0 zero3; do
  say "train $run on $ranks GPU(s)"
  "${train[@]}" --zero "${run#zero}" --out "$out/run_$run" > "$out/run_$run.log" 2>&1
done
# Offload: the host update amortised over 8 micro-batches, so it is a small part of the step.
say "train with and without offload, grad-accum 8"
"${train[@]}" --zero 2 --grad-accum 8 --out "$out/run_accum" > "$out/run_accum.log" 2>&1
"${train[@]}" --zero 2 --grad-accum 8 --offload --out "$out/run_offload" > "$out/run_offload.log" 2>&1

# 5. Collectives: NCCL between GPUs; with one GPU, two ranks share it over the MPI transport.
if [ "$gpus" -ge 2 ]; then coll=(-np "$gpus"); else coll=(-np 2 --share-gpu); fi
coll_cmd=("${mpirun[@]}" "${coll[@]:0:2}" "$bin" collectives bench --device cuda "${coll[@]:2}" --algo ring,native --op allgather,reduce_scatter,allreduce --dtype bf16 -b 1M -e 256M -f 4 --iters 10 --warmup 3 --json "$out/collectives.json")
say "collectives: ${coll_cmd[*]}"
"${coll_cmd[@]}" > "$out/collectives.txt" 2>&1

GPU_NAME=$gpu_name python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
load = lambda f: json.load(open(os.path.join(out, f)))
name = os.environ["GPU_NAME"]
peak = float(os.environ.get("GPU_PEAK_TFLOPS", 0)) or (756.0 if "PCIe" in name else 989.5 if ("H100" in name or "H200" in name) else 0)
s, eager, comp = load("step_shardlab.json"), load("step_torch_eager.json"), load("step_torch_compile.json")
L, d, T, params = 12, 768, 1024, s["params"]
flops_per_token = 6 * params + 12 * L * d * T  # nanoGPT's estimate: matmuls + attention
mfu = lambda tps: tps * flops_per_token / (peak * 1e12) if peak else float("nan")
rows = [("shardlab", s.get("tokens_per_s", 0))] + [(p.get("peer", f), p.get("tokens_per_s", 0)) for f, p in (("eager", eager), ("compile", comp))]
median = lambda d: load(os.path.join(d, "report.json"))["ranks"][0]["time"]["median_step_ms"]
z0, z3, acc, off = (median(f"run_{r}") for r in ("zero0", "zero3", "accum", "offload"))
lines = [f"# gpu_check on {name}", "", "| run | tokens/s | MFU | vs PyTorch eager |", "|---|---|---|---|"]
for who, tps in rows:
    ratio = tps / eager["tokens_per_s"] if eager.get("tokens_per_s") else float("nan")
    lines.append(f"| {who} | {tps:,.0f} | {mfu(tps):.1%} | {ratio:.2f}x |")
lines += ["", f"ZeRO-3 / ZeRO-0 step: {z3:.1f} / {z0:.1f} ms = {z3 / z0:.2f}x (target <= 1.15x)",
          f"offload / no offload step (ZeRO-2, grad-accum 8): {off:.1f} / {acc:.1f} ms = {off / acc:.2f}x (target <= 1.5x)",
          "", "collectives: collectives.txt (busbw per size, ring vs native, #wrong)"]
summary = "\n".join(lines) + "\n"
open(os.path.join(out, "summary.md"), "w").write(summary)
json.dump({"gpu": name, "peak_tflops": peak, "step": rows, "mfu_shardlab": mfu(rows[0][1]),
           "zero3_over_zero0": z3 / z0, "offload_over_none": off / acc}, open(os.path.join(out, "results.json"), "w"), indent=1)
print(summary)
PY
say "results in $out (summary.md); ctest -L gpu exit $status"
exit "$status"
