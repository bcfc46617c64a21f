// core/cuda/cublas_library: cuBLAS is opened when asked for, not when the process starts,
// and every function the kernels call is found. Needs no GPU: nothing here makes a handle.
#include "core/cuda/cublas_library.h"
#include "core/device.h"
#include "tests/mapped_files.h"

#include <gtest/gtest.h>

#include <string>

using namespace shardlab;

namespace {
// Whether a file whose name starts with `prefix` is mapped into this process.
bool mapped(const std::string& prefix) {
    for (const std::string& file : test::mapped_files())
        if (file.find("/" + prefix) != std::string::npos) return true;
    return false;
}
} // namespace

TEST(CublasLibrary, LoadedOnlyWhenAskedForWithEveryFunction) {
    // This binary links all of shardlab, as the `shardlab` binary does.
    EXPECT_FALSE(mapped("libcublas")) << "cuBLAS was loaded before anything asked for it";
    const cuda::CublasApi api = cuda::load_cublas();
#define SHARDLAB_EXPECT_FOUND(fn) EXPECT_NE(api.fn, nullptr) << #fn;
    SHARDLAB_CUBLAS_FUNCTIONS(SHARDLAB_EXPECT_FOUND)
    SHARDLAB_CUBLASLT_FUNCTIONS(SHARDLAB_EXPECT_FOUND)
#undef SHARDLAB_EXPECT_FOUND
    EXPECT_NE(api.cublasGemmStridedBatchedEx, nullptr);
#ifndef SHARDLAB_CUDA_EMU
    EXPECT_TRUE(mapped("libcublas.so.")) << "the toolkit's libcublas";
    EXPECT_TRUE(mapped("libcublasLt.so.")) << "the toolkit's libcublasLt";
    // cuBLAS's own words for a status, from the loaded library: its functions are callable.
    EXPECT_STREQ(api.cublasGetStatusName(CUBLAS_STATUS_NOT_INITIALIZED),
                 "CUBLAS_STATUS_NOT_INITIALIZED");
    // `shardlab device` names the files the loader took.
    const std::string files = cuda_libraries();
    EXPECT_EQ(files, api.files);
    EXPECT_NE(files.find("/libcublas.so." + std::to_string(CUBLAS_VER_MAJOR) + ", /"),
              std::string::npos)
        << files;
    EXPECT_NE(files.find("/libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR)), std::string::npos)
        << files;
#else
    EXPECT_NE(cuda_libraries().find("the emulator's"), std::string::npos) << cuda_libraries();
#endif
}
