#!/usr/bin/env bash
# `--device cuda` from the command line, under the SIMT emulator (each process one emulated GPU;
# SHARDLAB_EMU_GPUS says how many a node shows, SHARDLAB_EMU_MEMORY how much memory one has):
#   - eval, bench step and collectives bench run on it and agree with the CPU;
#   - bad input is a clear message naming the rank and the fix, exit 2, and no rank hangs: no GPU,
#     more ranks than GPUs, NCCL asked for ranks that share a GPU, a CUDA error (out of memory) and
#     an NCCL error (SHARDLAB_EMU_NCCL_FAIL) on one rank.
# Usage: cuda_cli_check.sh SHARDLAB EXPECT MPIRUN [MPIRUN ARGS...]
set -euo pipefail
shardlab=$1 expect=$2
shift 2
mpirun=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
model=(--layers 2 --hidden 64 --heads 4 --seq 32 --vocab 256)
head -c 3000 /usr/share/common-licenses/GPL-3 > "$work/data.txt" # ~90 windows: the emulator is slow
data=$work/data.txt

# eval: the same loss on the emulated GPU (2 ranks, NCCL's stand-in in place) as on the CPU. The
# forward's GEMMs accumulate in another order: 1e-5 relative in fp32.
"$shardlab" train "${model[@]}" --steps 2 --quiet --out "$work/w" --save-weights "$work/w.safetensors" >/dev/null
cpu=$("$shardlab" eval --weights "$work/w.safetensors" --data "$data" --precision fp32 --json)
gpu=$(SHARDLAB_EMU_GPUS=2 "${mpirun[@]}" -np 2 "$shardlab" eval --weights "$work/w.safetensors" --data "$data" --precision fp32 --json --device cuda)
python3 - "$cpu" "$gpu" <<'PY'
import json, sys
cpu, gpu = json.loads(sys.argv[1]), json.loads(sys.argv[2])  # one line: rank 0 speaks
gap = abs(cpu["loss"] - gpu["loss"]) / cpu["loss"]
assert gap <= 1e-5 and cpu["tokens"] == gpu["tokens"], (cpu, gpu, gap)
print(f"ok: eval on cuda {gpu['loss']:.6f} vs cpu {cpu['loss']:.6f} (relative {gap:.1e})")
PY

# bench step: runs, and says where.
"$shardlab" bench step --device cuda "${model[@]}" --batch 1 --steps 2 --warmup 1 --json > "$work/step.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['device']=='cuda' and d['tokens_per_s']>0, d; print('ok: bench step on cuda')" "$work/step.json"

# collectives bench: ring and native over NCCL's stand-in, every result checked (#wrong 0) ...
SHARDLAB_EMU_GPUS=3 "${mpirun[@]}" -np 3 "$shardlab" collectives bench --device cuda --algo ring,native \
  --op allgather,reduce_scatter,allreduce --dtype bf16 -b 1K -e 8K -f 8 --iters 1 --warmup 1 --json "$work/coll.json" >/dev/null
python3 "$(dirname "$0")/check_bench_json.py" "$work/coll.json" 3
# ... and every collective over the MPI transport between two ranks sharing a GPU (staged
# through pinned host memory, MPI on the transport's host stream).
SHARDLAB_EMU_GPUS=1 "${mpirun[@]}" -np 2 "$shardlab" collectives bench --device cuda --share-gpu --algo ring,native \
  --op allgather,reduce_scatter,allreduce,broadcast,reduce,gather,scatter --dtype fp16 -b 1K -e 8K -f 8 --iters 1 --warmup 1 --json "$work/coll2.json" >/dev/null
python3 "$(dirname "$0")/check_bench_json.py" "$work/coll2.json" 2

# One GPU per rank chosen by the launcher (Slurm's --gpus-per-task=1: a different one-device
# CUDA_VISIBLE_DEVICES per rank): each rank takes its GPU 0, over NCCL, without --share-gpu.
SHARDLAB_EMU_GPUS=1 "${mpirun[@]}" -np 1 -x CUDA_VISIBLE_DEVICES=0 "$shardlab" collectives bench --device cuda --op allreduce \
  --dtype fp32 -b 1K -e 1K --iters 1 --warmup 0 --json "$work/own.json" : \
  -np 1 -x CUDA_VISIBLE_DEVICES=1 "$shardlab" collectives bench --device cuda --op allreduce \
  --dtype fp32 -b 1K -e 1K --iters 1 --warmup 0 --json "$work/own.json" >/dev/null
python3 "$(dirname "$0")/check_bench_json.py" "$work/own.json" 2

# Bad input.
SHARDLAB_EMU_GPUS=0 "$expect" 2 "no CUDA GPU is usable" "${mpirun[@]}" -np 2 "$shardlab" train "${model[@]}" --steps 1 --device cuda --out "$work/x"
SHARDLAB_EMU_GPUS=1 "$expect" 2 "2 ranks on this node but 1 GPU visible" "${mpirun[@]}" -np 2 "$shardlab" train "${model[@]}" --steps 1 --device cuda --out "$work/x"
SHARDLAB_EMU_GPUS=1 "$expect" 2 "pass --share-gpu" "${mpirun[@]}" -np 2 "$shardlab" train "${model[@]}" --steps 1 --device cuda --out "$work/x"
SHARDLAB_EMU_GPUS=1 "$expect" 2 "NCCL allows one rank per GPU; use --transport mpi" "${mpirun[@]}" -np 2 "$shardlab" train "${model[@]}" --steps 1 --device cuda --share-gpu --transport nccl --out "$work/x"
"$expect" 2 "--share-gpu and --transport apply to --device cuda only" "$shardlab" train "${model[@]}" --steps 1 --share-gpu --out "$work/x"
"$expect" 2 "--transport infiniband is not a transport" "$shardlab" train "${model[@]}" --steps 1 --device cuda --transport infiniband --out "$work/x"
# The kernel choices read from the environment: a value that is neither is refused, naming both.
SHARDLAB_CUDA_FLASH=tiled "$expect" 2 "SHARDLAB_CUDA_FLASH=tiled: expected one of mma, auto, wmma, mma_regs, mma_wide (mma is the default)" "$shardlab" bench step --device cuda "${model[@]}" --batch 1 --steps 1 --warmup 0
SHARDLAB_CUDA_EPILOGUES=fused "$expect" 2 "SHARDLAB_CUDA_EPILOGUES=fused: expected one of cublaslt, separate (cublaslt is the default)" "$shardlab" bench step --device cuda "${model[@]}" --batch 1 --steps 1 --warmup 0
# A CUDA error on one rank (rank 1's GPU is out of memory while the engine places the model):
# every rank learns it, rank 1 and the error are named once, and nothing hangs.
"$expect" 2 "error on rank 1: out of GPU memory allocating" timeout 120 env SHARDLAB_EMU_GPUS=2 "${mpirun[@]}" \
  -np 1 "$shardlab" train "${model[@]}" --steps 2 --device cuda --out "$work/oom" : \
  -np 1 -x SHARDLAB_EMU_MEMORY=1000000 "$shardlab" train "${model[@]}" --steps 2 --device cuda --out "$work/oom"
# The same with two ranks sharing a GPU over the MPI transport, failing in the middle of a step:
# the other rank waits for it inside an exchange on the host stream.
"$expect" nonzero "rank 1: error: out of GPU memory allocating" timeout 120 env SHARDLAB_EMU_GPUS=1 "${mpirun[@]}" \
  -np 1 "$shardlab" train "${model[@]}" --steps 3 --zero 3 --device cuda --share-gpu --out "$work/oom2" : \
  -np 1 -x SHARDLAB_EMU_MEMORY=2400000 "$shardlab" train "${model[@]}" --steps 3 --zero 3 --device cuda --share-gpu --out "$work/oom2"
# An NCCL error on one rank (its network fails at the first send): named, with the fix, no hang.
"$expect" nonzero "rank 1: error: ncclSend failed" timeout 120 env SHARDLAB_EMU_GPUS=2 "${mpirun[@]}" \
  -np 1 "$shardlab" train "${model[@]}" --steps 2 --device cuda --out "$work/nccl" : \
  -np 1 -x SHARDLAB_EMU_NCCL_FAIL=ncclSend "$shardlab" train "${model[@]}" --steps 2 --device cuda --out "$work/nccl"
echo "ok: --device cuda from the command line"
