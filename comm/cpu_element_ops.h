// The CPU backend's element operations: the loops of comm/reduce_kernels.h as stream tasks.
#pragma once

#include "comm/element_ops.h"

namespace shardlab {

class CpuElementOps : public ElementOps {
  public:
    void reduce_add(Stream& s, void* out, const void* a, const void* b, std::size_t n, DType t,
                    float divisor) override;
};

} // namespace shardlab
