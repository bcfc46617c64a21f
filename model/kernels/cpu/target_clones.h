// Function multi-versioning for hot loops: compiled for AVX-512, AVX2 and baseline x86-64 and
// picked when the program loads (an ifunc). Sanitizer runtimes start after ifunc resolvers run, so
// a sanitized build keeps the baseline version only.
#pragma once

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SHARDLAB_TARGET_CLONES
#else
#define SHARDLAB_TARGET_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
