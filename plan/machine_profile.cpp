// The profile's JSON: one object per rate family, every value's unit in its key (_s, _s_per_byte,
// _bytes_per_s, _flop_per_s, _params_per_s). Reading checks everything it returns, so the time
// model never divides by a missing or zero rate.
#include "plan/machine_profile.h"

#include "core/error.h"
#include "plan/builtin_profiles.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>

namespace shardlab {

namespace {
using json = nlohmann::json;

json gemm_json(const GemmRate& g) {
    json shapes = json::array();
    for (const GemmSample& s : g.shapes) {
        const GemmShape& x = s.shape;
        json one = {{"name", x.name}, {"m", x.m}, {"n", x.n}, {"k", x.k}};
        one.update({{"trans_a", x.trans_a}, {"trans_b", x.trans_b}, {"per_step", x.per_step}});
        one.update(
            {{"flop", x.flop()}, {"seconds", s.seconds}, {"flop_per_s", x.flop() / s.seconds}});
        shapes.push_back(one);
    }
    json by_tokens = json::array();
    for (const auto& [n, r] : g.by_tokens) by_tokens.push_back({{"tokens", n}, {"flop_per_s", r}});
    return {{"flop_per_s", g.flop_per_s}, {"shapes", shapes}, {"by_tokens", by_tokens}};
}

json link_json(const LinkProfile& l) {
    json j = {{"ranks", l.ranks}};
    for (const auto& [op, c] : l.ops) {
        json samples = json::array();
        for (const CollectiveSample& s : c.samples)
            samples.push_back({{"bytes", s.bytes},
                               {"steps", s.steps},
                               {"step_bytes", s.step_bytes},
                               {"seconds", s.seconds},
                               {"predicted_seconds", s.steps * c.fit.seconds(s.step_bytes)}});
        j[op] = {{"alpha_s", c.fit.alpha_s},
                 {"beta_s_per_byte", c.fit.beta_s_per_byte},
                 {"samples", samples}};
    }
    return j;
}

// A value under `key` of `j` that is a number > 0 (>= 0 where zero_ok); else a UsageError that
// names the key path and the file.
double number(const json& j, const std::string& key, const std::string& path,
              const std::string& where, bool zero_ok = false) {
    const std::string at = path.empty() ? key : path + "." + key;
    if (!j.is_object() || !j.contains(key) || !j[key].is_number())
        throw UsageError(fmt::format("profile {}: '{}' is missing or not a number; recalibrate "
                                     "with `shardlab calibrate --out FILE` or name a built-in "
                                     "profile",
                                     where, at));
    const double v = j[key].get<double>();
    if (!(v > 0 || (zero_ok && v == 0)))
        throw UsageError(fmt::format("profile {}: '{}' is {}, it must be {}; recalibrate with "
                                     "`shardlab calibrate --out FILE`",
                                     where, at, v, zero_ok ? ">= 0" : "> 0"));
    return v;
}

const json& object(const json& j, const std::string& key, const std::string& where) {
    if (!j.contains(key) || !j[key].is_object())
        throw UsageError(fmt::format("profile {}: '{}' is missing or not an object; recalibrate "
                                     "with `shardlab calibrate --out FILE`",
                                     where, key));
    return j[key];
}

GemmRate gemm_from(const json& j, const std::string& path, const std::string& where) {
    GemmRate g{number(j, "flop_per_s", path, where), {}, {}};
    for (const json& s : j.value("shapes", json::array())) {
        GemmShape shape{s.value("name", ""),   s.value("m", 0),           s.value("n", 0),
                        s.value("k", 0),       s.value("trans_a", false), s.value("trans_b", false),
                        s.value("per_step", 1)};
        g.shapes.push_back({shape, number(s, "seconds", path + ".shapes." + shape.name, where)});
    }
    for (const json& b : j.value("by_tokens", json::array()))
        g.by_tokens[std::int64_t(number(b, "tokens", path + ".by_tokens", where))] =
            number(b, "flop_per_s", path + ".by_tokens", where);
    return g;
}

json attention_json(const std::map<std::string, std::map<std::string, AttentionRate>>& a) {
    json out = json::object();
    for (const auto& [dt, kinds] : a)
        for (const auto& [kind, r] : kinds)
            out[dt][kind] = {{"forward_flop_per_s", r.forward_flop_per_s},
                             {"backward_flop_per_s", r.backward_flop_per_s},
                             {"batch", r.batch},
                             {"seq", r.seq},
                             {"heads", r.heads},
                             {"head_dim", r.head_dim}};
    return out;
}

LinkProfile link_from(const json& j, const std::string& path, const std::string& where) {
    LinkProfile l;
    l.ranks = j.value("ranks", std::vector<int>{});
    for (const auto& [op, c] : j.items()) {
        if (op == "ranks") continue;
        const std::string at = path + "." + op;
        CollectiveFit f{
            {number(c, "alpha_s", at, where, true), number(c, "beta_s_per_byte", at, where)}, {}};
        for (const json& s : c.value("samples", json::array()))
            f.samples.push_back({s.value("bytes", std::uint64_t(0)), s.value("steps", 0),
                                 number(s, "step_bytes", at + ".samples", where),
                                 number(s, "seconds", at + ".samples", where)});
        l.ops[op] = f;
    }
    return l;
}
} // namespace

std::map<std::string, double> memory_bound_per_dtype(const std::vector<KernelSample>& kernels) {
    std::map<std::string, std::pair<double, double>> sums; // dtype -> (bytes, seconds)
    for (const KernelSample& k : kernels) {
        sums[k.dtype].first += k.bytes;
        sums[k.dtype].second += k.seconds;
    }
    std::map<std::string, double> out;
    for (const auto& [dt, bs] : sums) out[dt] = bs.first / bs.second;
    return out;
}

double gemm_rate_at(const GemmRate& g, double tokens) {
    if (g.by_tokens.empty()) return g.flop_per_s;
    const auto hi = g.by_tokens.lower_bound(std::int64_t(std::ceil(tokens)));
    if (hi == g.by_tokens.begin()) return hi->second;          // at or below the smallest
    if (hi == g.by_tokens.end()) return std::prev(hi)->second; // above the largest
    const auto lo = std::prev(hi);
    const double x = std::log(tokens), x0 = std::log(double(lo->first)),
                 x1 = std::log(double(hi->first));
    return lo->second + (hi->second - lo->second) * (x - x0) / (x1 - x0);
}

double memory_bound_rate(const MachineProfile& p, const std::string& dtype) {
    const auto it = p.memory_bound_by_dtype.find(dtype);
    return it != p.memory_bound_by_dtype.end() ? it->second : p.memory_bound_bytes_per_s;
}

double host_update_rate(const MachineProfile& p, const std::string& dtype) {
    const auto it = p.offload_params_per_s.find(dtype);
    return it != p.offload_params_per_s.end() ? it->second : p.host_adamw_params_per_s;
}

json profile_to_json(const MachineProfile& p) {
    json gemm = json::object(), links = json::object(), kernels = json::array();
    for (const auto& [dt, g] : p.gemm) gemm[dt] = gemm_json(g);
    for (const auto& [cls, l] : p.links) links[cls] = link_json(l);
    for (const KernelSample& k : p.memory_kernels)
        kernels.push_back({{"name", k.name},
                           {"dtype", k.dtype},
                           {"bytes", k.bytes},
                           {"seconds", k.seconds},
                           {"bytes_per_s", k.bytes / k.seconds}});
    json j = {{"schema", "shardlab machine profile"},
              {"schema_version", p.schema_version},
              {"name", p.name},
              {"description", p.description},
              {"machine", {{"cpu", p.cpu}, {"device", p.device}}},
              {"layout", {{"ranks", p.ranks}, {"nodes", p.nodes}, {"describe", p.layout}}},
              {"date", p.date},
              {"model", p.model},
              {"gemm", gemm},
              {"attention", attention_json(p.attention)},
              {"memory_bound",
               {{"bytes_per_s", p.memory_bound_bytes_per_s},
                {"by_dtype", p.memory_bound_by_dtype},
                {"kernels", kernels}}},
              {"copy",
               {{"bytes", p.copy_bytes},
                {"h2d_pinned_bytes_per_s", p.h2d_pinned_bytes_per_s},
                {"d2h_pinned_bytes_per_s", p.d2h_pinned_bytes_per_s},
                {"h2d_pageable_bytes_per_s", p.h2d_pageable_bytes_per_s},
                {"d2h_pageable_bytes_per_s", p.d2h_pageable_bytes_per_s}}},
              {"host_adamw",
               {{"params", p.host_adamw_params},
                {"params_per_s", p.host_adamw_params_per_s},
                {"offload_params_per_s", p.offload_params_per_s}}},
              {"links", links}};
    if (!p.sources.empty()) j["sources"] = p.sources;
    return j;
}

MachineProfile profile_from_json(const json& j, const std::string& where) {
    if (!j.is_object() || j.value("schema", "") != "shardlab machine profile")
        throw UsageError("profile " + where +
                         " is not a shardlab machine profile (no \"schema\": \"shardlab machine "
                         "profile\"); write one with `shardlab calibrate --out FILE`");
    const int version = j.value("schema_version", 0);
    if (version != kProfileSchemaVersion)
        throw UsageError(fmt::format("profile {} has schema_version {}, this shardlab reads {}; "
                                     "recalibrate with `shardlab calibrate --out FILE`",
                                     where, version, kProfileSchemaVersion));
    MachineProfile p;
    p.name = j.value("name", "measured");
    p.description = j.value("description", "");
    const json& machine = object(j, "machine", where);
    p.cpu = machine.value("cpu", ""), p.device = machine.value("device", "");
    const json& layout = object(j, "layout", where);
    p.ranks = int(number(layout, "ranks", "layout", where));
    p.nodes = int(number(layout, "nodes", "layout", where));
    p.layout = layout.value("describe", "");
    p.date = j.value("date", "");
    p.model = j.value("model", json());
    for (const auto& [dt, g] : object(j, "gemm", where).items())
        p.gemm[dt] = gemm_from(g, "gemm." + dt, where);
    if (p.gemm.empty())
        throw UsageError("profile " + where +
                         " has no GEMM rate; recalibrate with `shardlab "
                         "calibrate --out FILE`");
    const json attention = j.value("attention", json::object()); // a local: items() refers to it
    for (const auto& [dt, kinds] : attention.items())
        for (const auto& [kind, r] : kinds.items()) {
            const std::string at = "attention." + dt + "." + kind;
            p.attention[dt][kind] = {number(r, "forward_flop_per_s", at, where),
                                     number(r, "backward_flop_per_s", at, where),
                                     r.value("batch", 0),
                                     r.value("seq", 0),
                                     r.value("heads", 0),
                                     r.value("head_dim", 0)};
        }
    const json& mem = object(j, "memory_bound", where);
    p.memory_bound_bytes_per_s = number(mem, "bytes_per_s", "memory_bound", where);
    for (const json& k : mem.value("kernels", json::array()))
        p.memory_kernels.push_back({k.value("name", ""), k.value("dtype", ""),
                                    number(k, "bytes", "memory_bound.kernels", where),
                                    number(k, "seconds", "memory_bound.kernels", where)});
    p.memory_bound_by_dtype = memory_bound_per_dtype(p.memory_kernels);
    const json& copy = object(j, "copy", where);
    p.copy_bytes = copy.value("bytes", std::uint64_t(0));
    p.h2d_pinned_bytes_per_s = number(copy, "h2d_pinned_bytes_per_s", "copy", where);
    p.d2h_pinned_bytes_per_s = number(copy, "d2h_pinned_bytes_per_s", "copy", where);
    p.h2d_pageable_bytes_per_s = number(copy, "h2d_pageable_bytes_per_s", "copy", where);
    p.d2h_pageable_bytes_per_s = number(copy, "d2h_pageable_bytes_per_s", "copy", where);
    const json& adam = object(j, "host_adamw", where);
    p.host_adamw_params = adam.value("params", std::uint64_t(0));
    p.host_adamw_params_per_s = number(adam, "params_per_s", "host_adamw", where);
    const json offload =
        adam.value("offload_params_per_s", json::object()); // kept: items() views it
    for (const auto& [dt, r] : offload.items()) {
        if (!r.is_number() || !(r.get<double>() > 0))
            throw UsageError("profile " + where + ": host_adamw.offload_params_per_s." + dt +
                             " must be a positive number; calibrate again");
        p.offload_params_per_s[dt] = r.get<double>();
    }
    for (const auto& [cls, l] : object(j, "links", where).items()) {
        if (cls != "intra_node" && cls != "inter_node")
            throw UsageError("profile " + where + ": unknown link class '" + cls +
                             "'; use intra_node or inter_node");
        p.links[cls] = link_from(l, "links." + cls, where);
    }
    p.sources = j.value("sources", std::map<std::string, std::string>{});
    return p;
}

MachineProfile load_profile(const std::string& name_or_file) {
    if (const MachineProfile* b = builtin_profile(name_or_file)) return *b;
    std::ifstream in(name_or_file);
    if (!in)
        throw UsageError(fmt::format("unknown profile '{}': not a built-in ({}) and no such file; "
                                     "name a built-in or a file written by `shardlab calibrate "
                                     "--out FILE`",
                                     name_or_file, builtin_profile_list()));
    std::stringstream text;
    text << in.rdbuf();
    json j;
    try {
        j = json::parse(text.str());
    } catch (const json::parse_error& e) { // its text, not the file's bytes (a binary file)
        throw UsageError(fmt::format("profile {} is not valid JSON (a syntax error at byte {}); "
                                     "name a profile that `shardlab calibrate --out FILE` wrote, "
                                     "or a built-in: {}",
                                     name_or_file, e.byte, builtin_profile_list()));
    }
    return profile_from_json(j, name_or_file);
}

std::string describe_profile(const MachineProfile& p) {
    auto src = [&](const std::string& key) {
        const auto it = p.sources.find(key);
        return it == p.sources.end() ? std::string() : "\n      source: " + it->second;
    };
    std::string s =
        fmt::format("profile {}{}\n  machine: {}; {}\n  layout: {} ({} ranks, {} "
                    "nodes){}\n",
                    p.name, p.description.empty() ? "" : " — " + p.description, p.cpu, p.device,
                    p.layout, p.ranks, p.nodes, p.date.empty() ? "" : "; measured " + p.date);
    for (const auto& [dt, g] : p.gemm)
        s += fmt::format("  gemm {}: {:.4g} FLOP/s ({} shapes){}\n", dt, g.flop_per_s,
                         g.shapes.size(), src("gemm." + dt));
    for (const auto& [dt, kinds] : p.attention)
        for (const auto& [kind, r] : kinds)
            s += fmt::format("  attention {} {}: forward {:.4g} FLOP/s, backward {:.4g} FLOP/s "
                             "(B {} T {} H {} head {})\n",
                             dt, kind, r.forward_flop_per_s, r.backward_flop_per_s, r.batch, r.seq,
                             r.heads, r.head_dim);
    s += fmt::format("  memory-bound kernels: {:.4g} B/s{}\n", p.memory_bound_bytes_per_s,
                     src("memory_bound"));
    for (const auto& [dt, r] : p.memory_bound_by_dtype)
        s += fmt::format("    {}: {:.4g} B/s\n", dt, r);
    s += fmt::format("  copy host->device pinned {:.4g} B/s, pageable {:.4g} B/s; device->host "
                     "pinned {:.4g} B/s, pageable {:.4g} B/s{}{}\n",
                     p.h2d_pinned_bytes_per_s, p.h2d_pageable_bytes_per_s, p.d2h_pinned_bytes_per_s,
                     p.d2h_pageable_bytes_per_s, src("copy"), src("copy.pageable"));
    s += fmt::format("  host AdamW: {:.4g} params/s{}\n", p.host_adamw_params_per_s,
                     src("host_adamw"));
    for (const auto& [dt, r] : p.offload_params_per_s)
        s += fmt::format("    offload pipeline, {} parameters: {:.4g} params/s\n", dt, r);
    if (p.links.empty()) s += "  links: none (one rank)\n";
    for (const auto& [cls, l] : p.links) {
        for (const auto& [op, c] : l.ops)
            s +=
                fmt::format("  {} {}: alpha {:.3g} s, beta {:.4g} s/B ({:.4g} B/s per step)\n", cls,
                            op, c.fit.alpha_s, c.fit.beta_s_per_byte, 1.0 / c.fit.beta_s_per_byte);
        s += src("links." + cls).empty() ? "" : src("links." + cls).substr(1) + "\n";
    }
    return s;
}

} // namespace shardlab
