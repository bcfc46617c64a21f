// StepIO: what every model family does the same around its layers — the token ids of a
// micro-batch checked and put on the device, one loss kept per forward until take_losses(), and
// the logits handed back without the padded vocabulary's columns.
#pragma once

#include "core/device_context.h"
#include "core/tensor.h"

#include <cstdint>
#include <vector>

namespace shardlab {

class StepIO {
  public:
    StepIO(DeviceContext& context, int batch, int seq, int vocab);

    // Checks every id is below the vocabulary (a clear error naming the fix), then uploads both.
    void upload_tokens(const std::uint16_t* inputs, const std::uint16_t* targets);
    const std::uint16_t* inputs() const { return inputs_.as<std::uint16_t>(); }
    const std::uint16_t* targets() const { return targets_.as<std::uint16_t>(); }
    void release_tokens();
    // A device double for the next forward's mean loss.
    double* next_loss();
    // The losses since the last call, in order; waits for them.
    std::vector<double> take_losses();
    // logits [B*T, Vp] as fp32 [B, T, V] on the host; waits for them.
    std::vector<float> unpadded_logits(const Tensor& logits);

  private:
    DeviceContext& ctx_;
    int B_, T_, V_;
    Allocation inputs_, targets_;
    std::vector<Allocation> losses_;
};

} // namespace shardlab
