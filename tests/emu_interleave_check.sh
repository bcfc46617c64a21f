#!/usr/bin/env bash
# Work on different streams that no event orders, run in three seeded interleavings
# (SHARDLAB_EMU_STREAMS=interleave:SEED for each seed of SHARDLAB_EMU_SEEDS): the CUDA op tests
# pass, and trainings that wait across the compute, comm and copy streams give the bits of issue
# order (tests/cuda_train_check.py emu-interleave). A missing cross-stream wait fails here.
# The op tests run without the flash kernels' shape sweeps (float64 reference, variants against
# each other, off the grid, one stage): each is one stream's launches between an upload and a
# read-back, the path every other test takes under each seed, and they are half of a run; the
# flash tests of determinism, grouped queries and the materialising path stay.
# Usage: emu_interleave_check.sh TEST_CUDA_OPS SHARDLAB MPIRUN [MPIRUN ARGS...]
set -euo pipefail
ops=$1
shift
sweeps=CudaOps.FlashAttentionMatchesAFloat64Reference:CudaOps.FlashAttentionMma*IsTheMmaKernelsBitForBit
sweeps+=:CudaOps.FlashAttentionOffTheGridIsTheAlignedBits:CudaOps.FlashAttentionOneStage*
for seed in ${SHARDLAB_EMU_SEEDS:-1 2 3}; do
    SHARDLAB_EMU_STREAMS=interleave:$seed "$ops" --gtest_brief=1 --gtest_filter=-$sweeps ||
        { echo "FAIL: test_cuda_ops under SHARDLAB_EMU_STREAMS=interleave:$seed"; exit 1; }
done
exec python3 "$(dirname "$0")/cuda_train_check.py" emu-interleave "$@"
