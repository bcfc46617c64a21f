// A cache of oneDNN matmul primitives keyed by shape; execution with caller-owned scratchpad.
#include "model/kernels/cpu/onednn_matmul.h"

#include "core/error.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace shardlab::cpu {

namespace {
using dnnl::memory;

memory::data_type to_dnnl(DType t) {
    check(t == DType::f32 || t == DType::bf16, "internal: oneDNN matmul takes fp32 or bf16");
    return t == DType::f32 ? memory::data_type::f32 : memory::data_type::bf16;
}

// A rows x cols matrix stored row-major with leading dimension ld, or (transposed) its
// transpose stored that way: oneDNN reads either through strides, no copy.
memory::desc matrix(DType t, int rows, int cols, int ld, bool transposed) {
    const memory::dims strides = transposed ? memory::dims{1, ld} : memory::dims{ld, 1};
    return memory::desc({rows, cols}, to_dnnl(t), strides);
}

auto key_of(const MatmulShape& s) {
    return std::make_tuple(int(s.dtype), s.trans_a, s.trans_b, s.M, s.N, s.K, s.lda, s.ldb, s.ldc,
                           s.alpha, s.beta, s.bias, s.f32_out);
}
using Key = decltype(key_of(MatmulShape{}));

// oneDNN 2.x scales (A B + bias) by the output scale, but the contract adds the bias unscaled:
// with alpha != 1 the bias is a binary-add post-op, which runs after the scale (and after the
// sum, when beta != 0). alpha = 1 (every GEMM of the model) keeps the primitive's own bias
// argument and its fastest kernels.
bool bias_as_post_op(const MatmulShape& s) {
    return s.bias && s.alpha != 1.0f;
}
int bias_post_op_arg(const MatmulShape& s) {
    return DNNL_ARG_ATTR_MULTIPLE_POST_OP(s.beta != 0.0f ? 1 : 0) | DNNL_ARG_SRC_1;
}

struct Entry {
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul prim;
};
} // namespace

struct OneDnnMatmul::Impl {
    dnnl::engine engine{dnnl::engine::kind::cpu, 0};
    std::mutex mutex; // the cache is shared by the streams' threads
    std::map<Key, Entry> cache;

    Entry& get(const MatmulShape& s) {
        std::lock_guard<std::mutex> lock(mutex);
        const Key k = key_of(s);
        if (auto it = cache.find(k); it != cache.end()) return it->second;
        const memory::desc a = matrix(s.dtype, s.M, s.K, s.lda, s.trans_a);
        const memory::desc b = matrix(s.dtype, s.K, s.N, s.ldb, s.trans_b);
        const memory::desc c = matrix(s.f32_out ? DType::f32 : s.dtype, s.M, s.N, s.ldc, false);
        const memory::desc bias = s.bias ? matrix(s.dtype, 1, s.N, s.N, false) : memory::desc();
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        if (s.alpha != 1.0f) attr.set_output_scales(0, {s.alpha});
        dnnl::post_ops po;
        if (s.beta != 0.0f) po.append_sum(s.beta); // + beta * dst, summed in fp32, rounded once
        if (bias_as_post_op(s)) po.append_binary(dnnl::algorithm::binary_add, bias);
        attr.set_post_ops(po);
        const memory::desc bias_arg = bias_as_post_op(s) ? memory::desc() : bias;
        dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, bias_arg, c), attr, engine);
        return cache.emplace(k, Entry{pd, dnnl::matmul(pd)}).first->second;
    }

    void execute(Entry& e, const MatmulShape& s, const void* A, const void* B, const void* bias,
                 void* C, void* scratchpad) {
        // oneDNN takes non-const handles; it does not write the inputs.
        std::unordered_map<int, memory> args{
            {DNNL_ARG_SRC, memory(e.pd.src_desc(), engine, const_cast<void*>(A))},
            {DNNL_ARG_WEIGHTS, memory(e.pd.weights_desc(), engine, const_cast<void*>(B))},
            {DNNL_ARG_DST, memory(e.pd.dst_desc(), engine, C)},
            {DNNL_ARG_SCRATCHPAD, memory(e.pd.scratchpad_desc(), engine, scratchpad)}};
        if (bias_as_post_op(s))
            args.emplace(bias_post_op_arg(s), memory(matrix(s.dtype, 1, s.N, s.N, false), engine,
                                                     const_cast<void*>(bias)));
        else if (s.bias)
            args.emplace(DNNL_ARG_BIAS, memory(e.pd.bias_desc(), engine, const_cast<void*>(bias)));
        dnnl::stream stream(engine); // CPU streams are cheap; this one runs on the calling thread
        e.prim.execute(stream, args);
        stream.wait();
    }
};

OneDnnMatmul::OneDnnMatmul() : impl_(std::make_unique<Impl>()) {}
OneDnnMatmul::~OneDnnMatmul() = default;

std::size_t OneDnnMatmul::scratchpad_bytes(const MatmulShape& s) {
    return impl_->get(s).pd.scratchpad_desc().get_size();
}

void OneDnnMatmul::run(const MatmulShape& s, const void* A, const void* B, const void* bias,
                       void* C, void* scratchpad) {
    impl_->execute(impl_->get(s), s, A, B, bias, C, scratchpad);
}

struct MatmulThreadState::Impl {
    // A shape this thread ran: its primitive (in the shared cache, whose entries never move) and
    // the memory objects of its arguments, repointed at each call's matrices.
    struct Shape {
        Key key;
        Entry* entry;
        std::unordered_map<int, memory> args;
    };
    static constexpr std::size_t kShapes = 32; // a kernel's tiles have a handful; more: start over
    std::vector<Shape> shapes;
    std::vector<std::byte> scratchpad;
    std::optional<dnnl::stream> stream;

    Shape* find(const Key& k) {
        for (Shape& x : shapes)
            if (x.key == k) return &x;
        return nullptr;
    }

    Shape& add(const Key& k, Entry& e, const dnnl::engine& engine) {
        if (shapes.size() == kShapes) shapes.clear();
        if (!stream) stream.emplace(engine); // CPU streams run on the calling thread
        std::unordered_map<int, memory> args{
            {DNNL_ARG_SRC, memory(e.pd.src_desc(), engine, nullptr)},
            {DNNL_ARG_WEIGHTS, memory(e.pd.weights_desc(), engine, nullptr)},
            {DNNL_ARG_DST, memory(e.pd.dst_desc(), engine, nullptr)},
            {DNNL_ARG_SCRATCHPAD, memory(e.pd.scratchpad_desc(), engine, nullptr)}};
        return shapes.emplace_back(Shape{k, &e, std::move(args)});
    }

    void run(Shape& x, const void* A, const void* B, void* C) {
        const std::size_t need = x.entry->pd.scratchpad_desc().get_size();
        if (scratchpad.size() < need) scratchpad.resize(need);
        // oneDNN takes non-const handles; it does not write the inputs.
        x.args.at(DNNL_ARG_SRC).set_data_handle(const_cast<void*>(A));
        x.args.at(DNNL_ARG_WEIGHTS).set_data_handle(const_cast<void*>(B));
        x.args.at(DNNL_ARG_DST).set_data_handle(C);
        x.args.at(DNNL_ARG_SCRATCHPAD).set_data_handle(scratchpad.data());
        x.entry->prim.execute(*stream, x.args);
        stream->wait();
    }
};

MatmulThreadState::MatmulThreadState() : impl_(std::make_unique<Impl>()) {}
MatmulThreadState::~MatmulThreadState() = default;
MatmulThreadState::MatmulThreadState(MatmulThreadState&&) noexcept = default;
MatmulThreadState& MatmulThreadState::operator=(MatmulThreadState&&) noexcept = default;

void OneDnnMatmul::run(const MatmulShape& s, const void* A, const void* B, void* C,
                       MatmulThreadState& state) {
    MatmulThreadState::Impl& t = *state.impl_;
    const Key k = key_of(s);
    MatmulThreadState::Impl::Shape* x = t.find(k);
    if (!x) x = &t.add(k, impl_->get(s), impl_->engine); // the shared cache, once a thread
    t.run(*x, A, B, C);
}

std::string OneDnnMatmul::implementation(DType dtype) {
    MatmulShape s;
    s.dtype = dtype;
    s.M = s.N = s.K = s.lda = s.ldb = s.ldc = 256;
    try {
        return impl_->get(s).pd.impl_info_str();
    } catch (const dnnl::error&) { // e.g. bf16 on a CPU without AVX-512: no kernel at all
        return "";
    }
}

bool OneDnnMatmul::has_kernel(DType dtype) {
    const std::string impl = implementation(dtype);
    return !impl.empty() && impl.find("ref") == std::string::npos;
}

std::string onednn_version() {
    const dnnl_version_t* v = dnnl_version();
    return std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
           std::to_string(v->patch);
}

} // namespace shardlab::cpu
