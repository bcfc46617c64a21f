#!/usr/bin/env bash
# Work on different streams that no event orders, run in three seeded interleavings
# (SHARDLAB_EMU_STREAMS=interleave:SEED for each seed of SHARDLAB_EMU_SEEDS): the CUDA op tests
# pass, and trainings that wait across the compute, comm and copy streams give the bits of issue
# order (tests/cuda_train_check.py emu-interleave). A missing cross-stream wait fails here.
# The op tests leave out SHARDLAB_EMU_OPS_SKIP (a gtest pattern list; CTest gives it the flash
# kernels' shape sweeps, tests/CMakeLists.txt): each is one stream's launches between an upload
# and a read-back, the path every other test takes under each seed.
# Usage: emu_interleave_check.sh TEST_CUDA_OPS SHARDLAB MPIRUN [MPIRUN ARGS...]
set -euo pipefail
ops=$1
shift
for seed in ${SHARDLAB_EMU_SEEDS:-1 2 3}; do
    SHARDLAB_EMU_STREAMS=interleave:$seed "$ops" --gtest_brief=1 --gtest_filter="-${SHARDLAB_EMU_OPS_SKIP:-}" ||
        { echo "FAIL: test_cuda_ops under SHARDLAB_EMU_STREAMS=interleave:$seed"; exit 1; }
done
exec python3 "$(dirname "$0")/cuda_train_check.py" emu-interleave "$@"
