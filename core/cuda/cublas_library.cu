// Opening cuBLAS: dlopen of the toolkit's libraries on a real build, the emulator's functions
// under -DSHARDLAB_CUDA=EMU (linked in, nothing to open).
#include "core/cuda/cublas_library.h"

#include "core/cuda/cuda_runtime_api.h"
#include "core/error.h"

#ifndef SHARDLAB_CUDA_EMU
#include "core/shared_library.h"
#endif

#include <string>

// The folder the build found cuBLAS in: the fallback when the loader's own search misses it.
#ifndef SHARDLAB_CUBLAS_DIR
#define SHARDLAB_CUBLAS_DIR ""
#endif
#if !defined(SHARDLAB_CUDA_EMU) && !defined(SHARDLAB_CUBLAS_SONAME)
#error "the build defines SHARDLAB_CUBLAS_SONAME and SHARDLAB_CUBLASLT_SONAME (CMakeLists.txt)"
#endif
// A macro's value as a string: SHARDLAB_NAME_OF(cublasCreate) is "cublasCreate_v2".
#define SHARDLAB_NAME_OF(fn) SHARDLAB_QUOTE(fn)
#define SHARDLAB_QUOTE(fn) #fn

namespace shardlab::cuda {

#ifdef SHARDLAB_CUDA_EMU
CublasApi load_cublas() {
    CublasApi api;
#define SHARDLAB_EMULATED(fn) api.fn = &::fn;
    SHARDLAB_CUBLAS_FUNCTIONS(SHARDLAB_EMULATED)
    SHARDLAB_CUBLASLT_FUNCTIONS(SHARDLAB_EMULATED)
#undef SHARDLAB_EMULATED
    api.cublasGemmStridedBatchedEx = &::cublasGemmStridedBatchedEx;
    api.files = "the emulator's (emu/cublas.cpp, emu/cublaslt.cpp), linked in";
    return api;
}
#else
CublasApi load_cublas() {
    const auto blas = SharedLibrary::open(SHARDLAB_CUBLAS_SONAME, SHARDLAB_CUBLAS_DIR,
                                          "cuBLAS, which the CUDA backend needs");
    const auto lt = SharedLibrary::open(SHARDLAB_CUBLASLT_SONAME, SHARDLAB_CUBLAS_DIR,
                                        "cuBLASLt, which the CUDA backend needs");
    CublasApi api;
#define SHARDLAB_FROM_BLAS(fn) api.fn = blas.function<decltype(api.fn)>(SHARDLAB_NAME_OF(fn));
#define SHARDLAB_FROM_LT(fn) api.fn = lt.function<decltype(api.fn)>(SHARDLAB_NAME_OF(fn));
    SHARDLAB_CUBLAS_FUNCTIONS(SHARDLAB_FROM_BLAS)
    SHARDLAB_CUBLASLT_FUNCTIONS(SHARDLAB_FROM_LT)
#undef SHARDLAB_FROM_BLAS
#undef SHARDLAB_FROM_LT
    api.cublasGemmStridedBatchedEx =
        blas.function<decltype(api.cublasGemmStridedBatchedEx)>("cublasGemmStridedBatchedEx");
    api.files = blas.file() + ", " + lt.file();
    return api;
}
#endif

std::string blas_libraries() {
    try {
        return load_cublas().files;
    } catch (const Error& e) {
        return e.what();
    }
}

Cublas::Cublas(bool with_lt) : api_(load_cublas()) {
    check(api_.cublasCreate(&blas_), "cublasCreate");
    if (!with_lt) return;
    const cublasStatus_t st = api_.cublasLtCreate(&lt_);
    if (st != CUBLAS_STATUS_SUCCESS) api_.cublasDestroy(blas_); // the destructor will not run
    check(st, "cublasLtCreate");
}

Cublas::~Cublas() {
    if (lt_) api_.cublasLtDestroy(lt_);
    api_.cublasDestroy(blas_);
}

void Cublas::check(cublasStatus_t status, const char* what) const {
    if (status != CUBLAS_STATUS_SUCCESS)
        throw Error(std::string(what) + " failed: " + api_.cublasGetStatusName(status) + " (" +
                    api_.cublasGetStatusString(status) + ")");
}

} // namespace shardlab::cuda
