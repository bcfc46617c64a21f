// The registry: model/family_list.h's lines as a table, indexed by Architecture.
#include "model/family.h"

#include "core/error.h"

#include <fmt/format.h>

namespace shardlab {

#define SHARDLAB_FAMILY(name) extern const Family name##_family;
#include "model/family_list.h"
#undef SHARDLAB_FAMILY

namespace {
// In Architecture's order (both are the list's order).
const Family* const kFamilies[] = {
#define SHARDLAB_FAMILY(name) &name##_family,
#include "model/family_list.h"
#undef SHARDLAB_FAMILY
};
constexpr int kCount = int(sizeof(kFamilies) / sizeof(kFamilies[0]));
static_assert(kCount == int(Architecture::params_only), "one table entry per architecture");
} // namespace

const Family& family(Architecture a) {
    require_family_built(a);
    return *kFamilies[int(a)];
}

void require_attention(const Family& f, AttentionKind attention) {
    if (attention != AttentionKind::flash && !f.materializing_attention)
        throw UsageError(fmt::format("{} runs flash attention only (it has no materializing "
                                     "kernel); drop --attention materialize",
                                     f.name));
}

std::vector<const Family*> all_families() {
    return {std::begin(kFamilies), std::end(kFamilies)};
}

std::string family_names() {
    std::string s;
    for (int i = 0; i < kCount; ++i)
        s += (i == 0 ? "" : i + 1 == kCount ? " or " : ", ") + std::string(kFamilies[i]->name);
    return s;
}

std::optional<Architecture> find_architecture(const std::string& name) {
    for (int i = 0; i < kCount; ++i)
        if (name == kFamilies[i]->name) return Architecture(i);
    return std::nullopt;
}

std::optional<Architecture> find_hf_architecture(const std::string& model_type) {
    for (int i = 0; i < kCount; ++i)
        if (model_type == kFamilies[i]->hf_model_type) return Architecture(i);
    return std::nullopt;
}

Architecture parse_architecture(const std::string& name) {
    if (const std::optional<Architecture> a = find_architecture(name)) return *a;
    throw UsageError("--arch " + name + " is not an architecture; use " + family_names());
}

const char* architecture_name(Architecture a) {
    return a == Architecture::params_only ? "params" : family(a).name;
}

void require_family_built(Architecture a) {
    if (a == Architecture::params_only)
        throw UsageError("a bare parameter count (plan --params) is no model to build");
}

} // namespace shardlab
