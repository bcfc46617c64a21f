// Operands filled with small constants (softmax over equal scores: the kernels' work does not
// depend on the values); every buffer is workspace on the compute stream.
#include "measure/attention_rate.h"

#include "measure/stream_timing.h"
#include "plan/time_model.h"

#include <vector>

namespace shardlab {

AttentionRate measure_attention_rate(Backend& backend, DType t, AttentionKind kind, int batch,
                                     int seq, int hidden, int heads, int kv_heads, int reps,
                                     MPI_Comm comm) {
    Ops& ops = backend.ops();
    Stream& s = backend.context().compute();
    MemoryTracker& tracker = backend.context().tracker();
    std::vector<Allocation> held;
    auto make = [&](DType dt, Shape shape, float value) {
        held.push_back(tracker.allocate(shape.numel() * dtype_size(dt), Category::workspace, s));
        const Tensor x{held.back().data(), dt, shape, backend.context().device()};
        ops.fill(s, x, value);
        return x;
    };
    const bool flash = kind == AttentionKind::flash;
    // The materialising kernels are multi-head only: they are timed at kv_heads = heads.
    const int Hkv = flash ? kv_heads : heads;
    const std::int64_t B = batch, T = seq, C = hidden, H = heads, W = C + 2 * C / H * Hkv;
    const Tensor qkv = make(t, {B, T, W}, 0.01f), dqkv = make(t, {B, T, W}, 0.0f);
    const Tensor out = make(t, {B, T, C}, 0.0f), dout = make(t, {B, T, C}, 0.01f);
    // Flash keeps the fp32 log-sum-exp per row; materialising keeps the probabilities.
    const Tensor kept = flash ? make(DType::f32, {B, H, T}, 0.0f) : make(t, {B, H, T, T}, 0.0f);
    auto time = [&](auto&& enqueue) { return stream_seconds(s, reps, comm, enqueue); };
    const double fwd_s = time([&] {
        if (flash)
            ops.flash_attention_forward(s, out, kept, qkv, heads, Hkv);
        else
            ops.attention_forward(s, out, kept, qkv, heads);
    });
    const double bwd_s = time([&] {
        if (flash)
            ops.flash_attention_backward(s, dqkv, dout, qkv, out, kept, heads, Hkv);
        else
            ops.attention_backward(s, dqkv, dout, qkv, kept, heads);
    });
    const AttentionFlop f = attention_flop(B, T, C, kind);
    return {f.forward / fwd_s, f.backward / bwd_s, batch, seq, heads, hidden / heads};
}

} // namespace shardlab
