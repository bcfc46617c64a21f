// Function multi-versioning for hot loops: compiled for x86-64-v4 (AVX-512 F, BW, DQ and VL), AVX2
// and baseline x86-64 and picked when the program loads (an ifunc). AVX-512F alone would leave GCC
// 256-bit AVX2-style code without masks or 16-bit element ops: half the speed in the bf16 loops.
// Sanitizer runtimes start after ifunc resolvers run, so a sanitized build keeps the baseline only;
// so does clang (the fuzzing build), which does not multiversion function templates.
#pragma once

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__) || defined(__clang__)
#define SHARDLAB_TARGET_CLONES
#else
#define SHARDLAB_TARGET_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
