#!/usr/bin/env bash
# Work on different streams that no event orders, run in three seeded interleavings
# (SHARDLAB_EMU_STREAMS=interleave:SEED for each seed of SHARDLAB_EMU_SEEDS): the CUDA op tests
# pass, and trainings that wait across the compute, comm and copy streams give the bits of issue
# order (tests/cuda_train_check.py emu-interleave). A missing cross-stream wait fails here.
# Usage: emu_interleave_check.sh TEST_CUDA_OPS SHARDLAB MPIRUN [MPIRUN ARGS...]
set -euo pipefail
ops=$1
shift
for seed in ${SHARDLAB_EMU_SEEDS:-1 2 3}; do
    SHARDLAB_EMU_STREAMS=interleave:$seed "$ops" --gtest_brief=1 ||
        { echo "FAIL: test_cuda_ops under SHARDLAB_EMU_STREAMS=interleave:$seed"; exit 1; }
done
exec python3 "$(dirname "$0")/cuda_train_check.py" emu-interleave "$@"
