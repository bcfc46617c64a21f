// OpenBLAS picks its GEMM kernel by CPU model at load time; on some virtual CPUs it does not
// recognise the model and falls back to a generic SSE3 kernel ("Prescott") that is several times
// slower, although the CPU has AVX2 / AVX-512. This names the kernel the CPU's features call for.
#pragma once

#include <string>

namespace shardlab::cpu {

std::string openblas_kernel(); // what OpenBLAS chose, e.g. "SkylakeX", "Haswell", "Prescott"

// The OPENBLAS_CORETYPE this CPU should use when OpenBLAS fell back to a generic kernel; empty
// when its own choice is fine or the variable is already set.
std::string openblas_kernel_override();

} // namespace shardlab::cpu
