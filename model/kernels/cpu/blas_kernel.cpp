// Feature test with GCC's __builtin_cpu_supports against OpenBLAS's own answer.
#include "model/kernels/cpu/blas_kernel.h"

#include <cblas.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace shardlab::cpu {

std::string openblas_kernel() {
    return openblas_get_corename();
}

std::string openblas_kernel_override() {
    if (std::getenv("OPENBLAS_CORETYPE")) return "";
    std::string name = openblas_kernel();
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    const bool generic =
        name == "prescott" || name == "core2" || name == "katmai" || name == "unknown";
    if (!generic) return "";
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
    return "";
}

} // namespace shardlab::cpu
