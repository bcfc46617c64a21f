// The shapes follow model/gpt2/gpt_model.cpp's calls (a Llama's: llama_gemm_shapes below): a linear
// y = x W (W stored [in, out]) runs x @ W forward, dy @ W^T for the input gradient and x^T @ dy for
// the weight gradient; the head multiplies by wte^T (wte stored [Vp, d]), so its transposes are the
// other way round.
#include "plan/gemm_shapes.h"

namespace shardlab {

namespace {
void add_linear(std::vector<GemmShape>& out, const std::string& name, std::int64_t tokens,
                std::int64_t in, std::int64_t outf, int per_step) {
    out.push_back({name + ".forward", tokens, outf, in, false, false, per_step});
    out.push_back({name + ".input_grad", tokens, in, outf, false, true, per_step});
    out.push_back({name + ".weight_grad", in, outf, tokens, true, false, per_step});
}

// A Llama's linears are nn.Linear's y = x W^T (W stored [out, in], model/llama/llama_model.cpp):
// x @ W^T forward, dy @ W for the input gradient, dy^T @ x for the weight gradient.
void add_linear_t(std::vector<GemmShape>& out, const std::string& name, std::int64_t tokens,
                  std::int64_t in, std::int64_t outf, int per_step) {
    out.push_back({name + ".forward", tokens, outf, in, false, true, per_step});
    out.push_back({name + ".input_grad", tokens, in, outf, false, false, per_step});
    out.push_back({name + ".weight_grad", outf, in, tokens, true, false, per_step});
}

std::vector<GemmShape> llama_gemm_shapes(const ModelConfig& c, std::int64_t tokens) {
    const std::int64_t d = c.hidden, f = c.ffn(),
                       q = std::int64_t(c.heads + 2 * c.kv_heads) * c.head_dim();
    std::vector<GemmShape> s;
    add_linear_t(s, "attn.qkv", tokens, d, q, c.layers);
    add_linear_t(s, "attn.o", tokens, d, d, c.layers);
    add_linear_t(s, "mlp.gate", tokens, d, f, c.layers);
    add_linear_t(s, "mlp.up", tokens, d, f, c.layers);
    add_linear_t(s, "mlp.down", tokens, f, d, c.layers);
    add_linear_t(s, "head", tokens, d, c.padded_vocab(), 1);
    return s;
}
} // namespace

std::vector<GemmShape> model_gemm_shapes(const ModelConfig& c, std::int64_t tokens) {
    if (c.arch == Architecture::llama) return llama_gemm_shapes(c, tokens);
    const std::int64_t d = c.hidden, vp = c.padded_vocab();
    std::vector<GemmShape> s;
    add_linear(s, "attn.qkv", tokens, d, 3 * d, c.layers);
    add_linear(s, "attn.proj", tokens, d, d, c.layers);
    add_linear(s, "mlp.fc", tokens, d, 4 * d, c.layers);
    add_linear(s, "mlp.proj", tokens, 4 * d, d, c.layers);
    // Head: logits = lnf @ wte^T; dlnf = dlogits @ wte; dwte = dlogits^T @ lnf.
    s.push_back({"head.forward", tokens, vp, d, false, true, 1});
    s.push_back({"head.input_grad", tokens, d, vp, false, false, 1});
    s.push_back({"head.weight_grad", vp, d, tokens, true, false, 1});
    return s;
}

} // namespace shardlab
