// The CUDA kernels' launchers: each enqueues its kernel on the stream it is given and returns at
// once (no synchronisation), with the semantics of its CPU twin in model/kernels/cpu/ — fp32
// arithmetic, one rounding on store, and where the CPU sums in a fixed order, the same order, so
// results match it bit for bit (shardlab compiles its CUDA code without fused multiply-adds, as
// its C++). One launcher per concept, one file per concept. Included by .cu files only.
#pragma once

#include "core/dtype.h"
#include "model/kernels/adamw_step.h"
#include "model/kernels/rope_frequency.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace shardlab::cuda {

// elementwise.cu — dst += src; dst = src converted; dst = value; out[r, :] = bias for every row.
void accumulate(cudaStream_t s, void* dst, const void* src, std::size_t n, DType t);
void convert(cudaStream_t s, void* dst, DType dst_type, const void* src, DType src_type,
             std::size_t n);
void fill(cudaStream_t s, void* dst, DType t, std::size_t n, float value);
void bias_rows(cudaStream_t s, void* out, const void* bias, int rows, int cols, DType t);

// column_sums.cu — dst [cols] += the sums over rows of src [rows, cols]. Rows are summed in
// chunks of kColumnChunkRows, the chunks in parallel into fp32 partials, then the partials in
// chunk order: a fixed order (the same bits every run), the CPU's own when rows fit one chunk.
constexpr int kColumnChunkRows = 128;
inline int column_chunks(int rows) {
    return (rows + kColumnChunkRows - 1) / kColumnChunkRows;
}
// partials: column_chunks(rows) * cols floats of device scratch.
void add_column_sums(cudaStream_t s, void* dst, const void* src, int rows, int cols, DType t,
                     float* partials);
// dst [cols] += the sum, in chunk order, of partials [chunks, cols].
void add_column_partials(cudaStream_t s, void* dst, const float* partials, int chunks, int cols,
                         DType t);

// gelu.cu — tanh form; backward overwrites din with gelu'(in) * dout. gelu_backward_bias_grad:
// grad [rows, cols] = gelu'(pre) * grad in place, then dbias [cols] += its column sums — the bits
// of gelu_backward then add_column_sums, in one pass over grad fewer (partials as theirs).
void gelu_forward(cudaStream_t s, void* out, const void* in, std::size_t n, DType t);
void gelu_backward(cudaStream_t s, void* din, const void* in, const void* dout, std::size_t n,
                   DType t);
void gelu_backward_bias_grad(cudaStream_t s, void* grad, void* dbias, const void* pre, int rows,
                             int cols, DType t, float* partials);

// Llama's kernels (issue 25), the CPU twins' semantics (model/kernels/cpu/{rmsnorm,rope,swiglu}.h).
// rmsnorm.cu — over rows of C; rstd fp32 [N]. Backward: din += the input's gradient, dweight +=
// the column sums of dout * in * rstd (as above; partials: column_chunks(N) * C floats).
void rmsnorm_forward(cudaStream_t s, void* out, float* rstd, const void* in, const void* weight,
                     int N, int C, float eps, DType t);
void rmsnorm_backward(cudaStream_t s, void* din, void* dweight, const void* dout, const void* in,
                      const void* weight, const float* rstd, int N, int C, DType t,
                      float* partials);
// rope.cu — rotate-half RoPE in place over the first `heads` heads (head_dim each) of each of
// `rows` rows `stride` elements apart, row r at position r mod seq; backward the inverse rotation.
void rope_forward(cudaStream_t s, void* x, int rows, int seq, int heads, int head_dim, int stride,
                  const Rope& rope, DType t);
void rope_backward(cudaStream_t s, void* dx, int rows, int seq, int heads, int head_dim, int stride,
                   const Rope& rope, DType t);
// swiglu.cu — out = silu(gate) * up; backward overwrites dgate and dup.
void swiglu_forward(cudaStream_t s, void* out, const void* gate, const void* up, std::size_t n,
                    DType t);
void swiglu_backward(cudaStream_t s, void* dgate, void* dup, const void* dout, const void* gate,
                     const void* up, std::size_t n, DType t);

// layernorm.cu — over rows of C; mean, rstd fp32 [N]. Backward: din, dweight, dbias +=; the
// parameter gradients are column sums (as above), partials: 2 * column_chunks(N) * C floats.
void layernorm_forward(cudaStream_t s, void* out, float* mean, float* rstd, const void* in,
                       const void* weight, const void* bias, int N, int C, DType t);
// residual += x (rounded, as accumulate), then layernorm_forward of it: one kernel, the same bits.
void residual_layernorm_forward(cudaStream_t s, void* residual, const void* x, void* out,
                                float* mean, float* rstd, const void* weight, const void* bias,
                                int N, int C, DType t);
void layernorm_backward(cudaStream_t s, void* din, void* dweight, void* dbias, const void* dout,
                        const void* in, const void* weight, const float* mean, const float* rstd,
                        int N, int C, DType t, float* partials);

// embedding.cu — out = wte[token] + wpe[t]; backward dwte, dwpe += in position order per row,
// without atomics: the positions sorted by token on the device (stably), each token's row summed
// by one block, each position row by one thread per column.
void embedding_forward(cudaStream_t s, void* out, const std::uint16_t* tokens, const void* wte,
                       const void* wpe, int B, int T, int C, DType t);
// The device scratch (bytes) embedding_backward takes for `positions` = B * T.
std::size_t embedding_backward_scratch(int positions);
void embedding_backward(cudaStream_t s, void* dwte, void* dwpe, const void* dout,
                        const std::uint16_t* tokens, int B, int T, int C, DType t, void* scratch);

// cross_entropy.cu — per row of logits [N, ld], over its first V columns: loss in double into
// row_losses [N]; then their mean, summed in row order, into *loss. With dlogits_scale != 0 the
// logits become (softmax - onehot) * scale, the padded columns V..ld-1 zero.
void cross_entropy(cudaStream_t s, void* logits, const std::uint16_t* targets, int N, int V, int ld,
                   float dlogits_scale, double* row_losses, double* loss, DType t);

// softmax.cu — attention's causal softmax over fp32 scores [rows of T]: probabilities in t, zero
// above the diagonal (row i of each T x T matrix keeps columns 0..i). And its backward: from
// dprob (fp32) and prob (t), dscore = prob * (dprob - sum(prob * dprob)) * scale, in t.
void causal_softmax(cudaStream_t s, void* prob, const float* scores, int matrices, int T, DType t);
void causal_softmax_backward(cudaStream_t s, void* dscore, const float* dprob, const void* prob,
                             int matrices, int T, float scale, DType t);

// squared_norm.cu — *out = float(sum of squares of every element of the parts, in double): each
// part summed by a fixed tree (a block count that depends on its numel only), the partials by a
// fixed tree — the same bits on every call with the same parts. `partials`: scratch of
// squared_norm_scratch(parts, count) doubles.
struct NormInput {
    const void* data;
    std::size_t numel;
    DType dtype;
};
std::size_t squared_norm_scratch(const NormInput* parts, std::size_t count);
void squared_norm(cudaStream_t s, const NormInput* parts, std::size_t count, double* partials,
                  float* out);

// fixed_point.cu — --reproducible's exact sums (model/kernels/fixed_point.h; the CPU's twins
// in model/kernels/cpu/fixed_point.h). acc += round(x * 2^e) with *amax = max(*amax, max |x|);
// out = acc * 2^-e / divisor in t; *out += sum of round(x^2 * 2^e); dst += src (int64).
// fixed_accumulate and fixed_squares take fixed_scratch_bytes(n) of device scratch.
std::size_t fixed_scratch_bytes(std::size_t n);
void fixed_accumulate(cudaStream_t s, std::int64_t* acc, const void* x, DType t, std::size_t n,
                      int exponent, float* amax, void* scratch);
void fixed_to_float(cudaStream_t s, void* out, DType t, const std::int64_t* acc, std::size_t n,
                    int exponent, double divisor);
void fixed_squares(cudaStream_t s, const void* x, DType t, std::size_t n, int exponent,
                   std::int64_t* out, void* scratch);
void fixed_add(cudaStream_t s, std::int64_t* dst, const std::int64_t* src, std::size_t n);

// adamw.cu — for each input, AdamW on master, m, v (fp32) from grad; then params = master in
// params' dtype (params may be null). The CPU update's arithmetic and order: bitwise the same.
// Up to 32 inputs with the same dtypes go to one launch.
struct AdamWInput {
    float *master, *m, *v;
    const void* grad;
    DType grad_type;
    void* params;
    DType param_type;
    std::size_t n;
    AdamWStep k;
};
void adamw(cudaStream_t s, const AdamWInput* inputs, std::size_t count);

} // namespace shardlab::cuda
