#!/usr/bin/env bash
# The device watchdog (core/cuda/cuda_stream.cu): rank 1's emulated GPU stalls — one stream
# operation (SHARDLAB_EMU_STALL=op:K) or one host function (hostfn:K, in a run that has one: the
# staged transport before issue 27 had one per collective) never returns — and the job must end
# non-zero within --collective-timeout + 10 s of the stall (the emulator prints the moment it
# stalls), the stalled rank naming the stream and the collective it was given; and within 120 s in
# all, or it hung. --collective-timeout is 10 s: under CI's sanitizer build a healthy operation of
# the emulator can take seconds. Then a hybrid run over NCCL (4 ranks, shard groups of 2, each its
# own GPU) with rank 1 stopped at a validation (SHARDLAB_TEST_STOP_AT): the others' device
# watchdogs must end the job with their message. They hung, silent: unwinding, a group's NCCL
# transport freed its memory, and cudaFree waited for the device, whose stream still waited in the
# world communicator's collective, not aborted yet.
# Usage: emu_stall_check.sh SHARDLAB MPIRUN [MPIRUN ARGS...]
set -uo pipefail
shardlab=$1
shift
mpirun=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
timeout_s=10
for stall in op:40 op:400; do
    SHARDLAB_EMU_GPUS=1 SHARDLAB_EMU_STALL=$stall timeout 120 "${mpirun[@]}" -np 2 "$shardlab" train \
        --layers 2 --hidden 64 --heads 4 --seq 32 --vocab 256 --micro-batch 2 --steps 4 \
        --device cuda --share-gpu --transport mpi --zero 3 --quiet --out "$work/out-${stall/:/-}" \
        --collective-timeout $timeout_s >"$work/log" 2>&1
    rc=$?
    stalled_at=$(sed -n 's/.*SHARDLAB_EMU_STALL: stalled at \([0-9.]*\).*/\1/p' "$work/log" | head -1)
    took=$(python3 -c "import time; print(f'{time.time() - ${stalled_at:-0}:.1f}')")
    if [ -z "$stalled_at" ]; then
        echo "FAIL ($stall): exit $rc and nothing stalled (the run has fewer operations?)"
        cat "$work/log"
        exit 1
    fi
    if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
        echo "FAIL ($stall): exit $rc, $took s after the stall (0: the stall was not noticed; 124: hung)"
        cat "$work/log"
        exit 1
    fi
    if ! grep -q "device watchdog: waited .* for the [a-z]* stream of cuda:0" "$work/log"; then
        echo "FAIL ($stall): exit $rc $took s after the stall, but no report naming the stalled stream:"
        cat "$work/log"
        exit 1
    fi
    if python3 -c "import sys; sys.exit(0 if $took <= $timeout_s + 10 else 1)"; then :; else
        echo "FAIL ($stall): the job ended $took s after the stall, more than --collective-timeout $timeout_s + 10 s"
        exit 1
    fi
    echo "ok ($stall): exit $rc $took s after the stall:"; grep "device watchdog" "$work/log" | head -1
done

SHARDLAB_EMU_GPUS=4 SHARDLAB_TEST_STOP_AT=validation:1 timeout 120 "${mpirun[@]}" -np 4 "$shardlab" train \
    --layers 2 --hidden 64 --heads 4 --seq 32 --vocab 256 --micro-batch 2 --steps 4 --val-every 1 \
    --device cuda --transport nccl --zero 3 --shard-group 2 --quiet --out "$work/out-nccl-groups" \
    --collective-timeout $timeout_s >"$work/log" 2>&1
rc=$?
if [ $rc -eq 0 ] || [ $rc -eq 124 ] || ! grep -q "rank [023]: error: device watchdog: waited" "$work/log"; then
    echo "FAIL (NCCL, shard groups, rank 1 stopped): exit $rc (124: hung), or no rank's device watchdog error:"
    cat "$work/log"
    exit 1
fi
echo "ok (NCCL, shard groups, rank 1 stopped): exit $rc:"; grep -m1 "error: device watchdog" "$work/log"

