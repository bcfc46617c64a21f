// The element-type tags of CUDA's library_types.h, for the SIMT emulator (test infrastructure:
// never in a real CUDA build). Only the tags shardlab's cuBLAS stand-in meets; the values are
// CUDA's, so code that stores or switches on them behaves as against the real header.
#pragma once

enum cudaDataType_t {
    CUDA_R_32F = 0,   // float
    CUDA_R_64F = 1,   // double
    CUDA_R_16F = 2,   // half (__half)
    CUDA_R_8I = 3,    // int8_t
    CUDA_C_32F = 4,   // complex float
    CUDA_C_64F = 5,   // complex double
    CUDA_C_16F = 6,   // complex half
    CUDA_R_32I = 10,  // int32_t
    CUDA_R_16BF = 14, // bfloat16 (__nv_bfloat16)
    CUDA_C_16BF = 15, // complex bfloat16
};
using cudaDataType = cudaDataType_t;
