// Built without CUDA: asking for the CUDA backend says which build to make.
#include "core/error.h"
#include "model/backend.h"

namespace shardlab {

std::unique_ptr<Backend> make_cuda_backend(MPI_Comm, const CudaOptions&) {
    throw UsageError(
        "--device cuda: this shardlab was built without CUDA; reconfigure with "
        "-DSHARDLAB_CUDA=ON (needs nvcc, cuBLAS and NCCL) to run on a GPU, or with "
        "-DSHARDLAB_CUDA=EMU to run the CUDA backend on the CPU under the SIMT "
        "emulator (scripts/build_emu.sh builds that into build-emu/); or use --device cpu");
}

} // namespace shardlab
