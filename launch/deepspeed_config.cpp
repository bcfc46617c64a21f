// The key groups, DeepSpeed's batch rule, and applying the result with the --config rules. The
// DeepSpeed behaviour matched here is that of deepspeed/runtime/config.py (batch rule, bf16/fp16),
// engine.py (Adam / AdamW) and lr_schedules.py (WarmupLR, WarmupDecayLR, WarmupCosineLR).
#include "launch/deepspeed_config.h"

#include "core/error.h"
#include "core/json_depth.h"
#include "core/read_file.h"
#include "launch/config_file.h"
#include "launch/json_keys.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

namespace shardlab {

namespace {

using json = nlohmann::json;
using Kind = DsSetting::Kind;

std::string number_text(double v) {
    return fmt::format("{}", v);
}

// a x b, or the largest long long past it: no batch is that large, so a comparison still fails.
long long times(long long a, long long b) {
    long long r = 0;
    return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<long long>::max() : r;
}

// Collects the settings; a later group's value for a flag replaces an earlier one's.
struct Settings {
    DsMapping m;
    void set(const std::string& flag, const std::string& value, const std::string& source,
             Kind kind = Kind::given) {
        for (DsSetting& s : m.settings)
            if (s.flag == flag) {
                s = {flag, value, source, kind};
                return;
            }
        m.settings.push_back({flag, value, source, kind});
    }
    const DsSetting* find(const std::string& flag) const {
        for (const DsSetting& s : m.settings)
            if (s.flag == flag) return &s;
        return nullptr;
    }
    void note(const std::string& text) { m.notes.push_back(text); }
};

// zero_optimization: stage -> --zero; offload_optimizer.device -> --offload; no parameter offload.
void map_zero(JsonKeys& k, Settings& s) {
    const std::string stage_key = "zero_optimization.stage";
    if (const auto stage = k.whole(stage_key, 0)) {
        if (*stage > 3)
            k.fail(stage_key, fmt::format("is {}; ZeRO stages are 0, 1, 2 and 3", *stage));
        s.set("--zero", std::to_string(*stage), fmt::format("{} {}", stage_key, *stage));
    } else if (k.absent(stage_key)) {
        s.set("--zero", "0", "no zero_optimization.stage: DeepSpeed's default 0", Kind::implied);
    }
    const std::string opt_key = "zero_optimization.offload_optimizer.device";
    const auto device = k.text(opt_key);
    if (device == "cpu" || device == "none") {
        s.set("--offload", *device == "cpu" ? "true" : "false", opt_key + " \"" + *device + "\"");
    } else if (device == "nvme") {
        k.fail(opt_key, "\"nvme\" is not supported: shardlab offloads the optimizer state to host "
                        "memory only; use \"cpu\" (or \"none\")");
    } else if (device) {
        k.fail(opt_key, "is \"" + *device + "\"; use \"cpu\" or \"none\"");
    } else if (k.absent(opt_key)) {
        s.set("--offload", "false", "no offload_optimizer.device: DeepSpeed's default \"none\"",
              Kind::implied);
    }
    const std::string param_key = "zero_optimization.offload_param.device";
    const auto param = k.text(param_key);
    if (param == "cpu" || param == "nvme")
        k.fail(param_key, "\"" + *param +
                              "\" is not supported: shardlab has no parameter offload "
                              "(--offload moves the optimizer state only); use \"none\" or remove "
                              "offload_param");
    if (param && *param != "none") k.fail(param_key, "is \"" + *param + "\"; use \"none\"");
}

// fp16: initial_scale_power -> --loss-scale 2^k; a static loss_scale is refused.
void map_fp16_loss_scale(JsonKeys& k, Settings& s) {
    if (const auto scale = k.number("fp16.loss_scale"); scale && *scale != 0)
        k.fail("fp16.loss_scale",
               fmt::format("{} asks for a static loss scale; shardlab's fp16 loss scale is "
                           "dynamic (it starts at 2^initial_scale_power, halves on an overflow "
                           "and doubles after 1000 good steps): set loss_scale to 0",
                           *scale));
    const std::string key = "fp16.initial_scale_power";
    if (const auto power = k.whole(key, 0)) {
        if (*power > 100)
            k.fail(key, fmt::format("is {}; 2^{} is past fp32's range", *power, *power));
        s.set("--loss-scale", number_text(std::ldexp(1.0, int(*power))),
              fmt::format("{} {}", key, *power));
    } else if (k.absent(key)) {
        s.set("--loss-scale", "65536", "no fp16.initial_scale_power: DeepSpeed's default 16",
              Kind::implied);
    }
}

// bf16.enabled / fp16.enabled -> --precision; neither enabled is fp32, as in DeepSpeed.
void map_precision(JsonKeys& k, Settings& s) {
    // "bfloat16" is the section's older name, which DeepSpeed still reads.
    const std::string bf = k.absent("bf16") && !k.absent("bfloat16") ? "bfloat16" : "bf16";
    const auto bf16 = k.boolean(bf + ".enabled");
    const auto fp16 = k.boolean("fp16.enabled");
    if (bf16.value_or(false) && fp16.value_or(false))
        k.fail(bf + ".enabled", "and fp16.enabled are both true (DeepSpeed refuses this too); "
                                "enable one of them");
    if (bf16.value_or(false)) {
        s.set("--precision", "bf16", bf + ".enabled true");
    } else if (fp16.value_or(false)) {
        s.set("--precision", "fp16", "fp16.enabled true");
        map_fp16_loss_scale(k, s);
    } else if (!k.is_auto(bf + ".enabled") && !k.is_auto("fp16.enabled")) {
        const bool said = bf16.has_value() || fp16.has_value(); // an explicit false
        s.set("--precision", "fp32",
              said ? "neither bf16.enabled nor fp16.enabled is true"
                   : "no bf16 or fp16 section: DeepSpeed trains in fp32",
              said ? Kind::given : Kind::implied);
    }
}

// train_batch_size = train_micro_batch_size_per_gpu x gradient_accumulation_steps x world size.
// DeepSpeed's rule (runtime/config.py): two of the three give the third; train_batch_size alone
// or the micro-batch alone mean no accumulation; all three must agree.
void map_batch(JsonKeys& k, Settings& s, int world) {
    const std::string tk = "train_batch_size", mk = "train_micro_batch_size_per_gpu",
                      ak = "gradient_accumulation_steps";
    auto T = k.whole(tk, 1), M = k.whole(mk, 1), A = k.whole(ak, 1);
    if (!T && !M) { // nothing to resolve (DeepSpeed would refuse a lone accumulation count)
        if (A) s.set("--grad-accum", std::to_string(*A), fmt::format("{} {}", ak, *A));
        return;
    }
    const std::string ranks = fmt::format("{} rank{}", world, world == 1 ? "" : "s");
    const long long MA_N = M && A ? times(times(*M, *A), world) : 0; // all three given: must be T
    std::string m_src = M ? fmt::format("{} {}", mk, *M) : "",
                a_src = A ? fmt::format("{} {}", ak, *A) : "";
    if (T && !M) { // the micro-batch follows
        const long long a = A.value_or(1);
        if (*T % times(a, world) != 0)
            k.fail(tk, fmt::format("{} is not a multiple of {}{} = {} (DeepSpeed's rule: "
                                   "train_batch_size = micro-batch x accumulation x ranks); use a "
                                   "multiple of {}, or give {}",
                                   *T, A ? fmt::format("{} {} x ", ak, a) : "", ranks,
                                   times(a, world), times(a, world), mk));
        M = *T / times(a, world);
        m_src = fmt::format("{} {} / ({} x {})", tk, *T, a, ranks);
        if (!A) a_src = fmt::format("1: {} without {} or {}", tk, mk, ak);
        A = a;
    } else if (T && !A) { // the accumulation follows
        if (*T % times(*M, world) != 0)
            k.fail(tk,
                   fmt::format("{} is not a multiple of {} {} x {} = {} (DeepSpeed's rule); use "
                               "a multiple of {}",
                               *T, mk, *M, ranks, times(*M, world), times(*M, world)));
        A = *T / times(*M, world);
        a_src = fmt::format("{} {} / ({} {} x {})", tk, *T, mk, *M, ranks);
    } else if (!T) { // train_batch_size follows
        if (!A) a_src = fmt::format("1: {} without {} or {}", mk, tk, ak);
        A = A.value_or(1);
        T = times(times(*M, *A), world);
    } else if (*T != MA_N) {
        k.fail(tk, fmt::format("{} is not {} {} x {} {} x {} = {} (DeepSpeed's rule: "
                               "train_batch_size = micro-batch x accumulation x ranks); correct "
                               "one of the three, or drop {} and let it follow",
                               *T, mk, *M, ak, *A, ranks, MA_N, tk));
    }
    s.set("--micro-batch", std::to_string(*M), m_src);
    s.set("--grad-accum", std::to_string(*A), a_src);
    s.set("--global-batch", std::to_string(*T), fmt::format("{} {}", tk, *T), Kind::check);
    s.m.train_batch_size = *T;
}

// gradient_clipping -> --grad-clip; DeepSpeed does not clip when it is absent.
void map_clipping(JsonKeys& k, Settings& s) {
    const std::string key = "gradient_clipping";
    if (const auto clip = k.number(key)) {
        if (*clip < 0) k.fail(key, fmt::format("is {}; use 0 (off) or a positive norm", *clip));
        s.set("--grad-clip", number_text(*clip), fmt::format("{} {}", key, *clip));
    } else if (k.absent(key)) {
        s.set("--grad-clip", "0", "no gradient_clipping: DeepSpeed does not clip", Kind::implied);
    }
}

// optimizer: Adam / AdamW with decoupled weight decay (DeepSpeed's adam_w_mode, on by default);
// params lr, betas, eps, weight_decay. Absent params take DeepSpeed's optimizer defaults.
void map_optimizer(JsonKeys& k, Settings& s) {
    if (k.absent("optimizer")) return; // the client's optimizer: shardlab's flags stand
    const std::string P = "optimizer.params.";
    const auto type = k.text("optimizer.type");
    std::string lower = type.value_or("");
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    if (lower != "adam" && lower != "adamw")
        k.fail("optimizer.type",
               (type ? "\"" + *type + "\" is not supported" : std::string("is missing")) +
                   ": shardlab's optimizer is AdamW (decoupled weight decay); use \"AdamW\"");
    // engine.py: "Adam" is AdamW unless adam_w_mode is false; torch_adam picks torch's class.
    const bool adam_w_mode = k.boolean(P + "adam_w_mode").value_or(true); // read for AdamW too
    const bool adamw = lower == "adamw" || adam_w_mode;
    const bool torch_adam = k.boolean(P + "torch_adam").value_or(false);
    if (k.boolean(P + "bias_correction") == false)
        k.fail(P + "bias_correction", "false is not supported: shardlab's AdamW always corrects "
                                      "the moments' bias; remove the key");
    if (k.boolean(P + "amsgrad") == true)
        k.fail(P + "amsgrad", "true is not supported (shardlab's AdamW has no AMSGrad); remove it");
    auto value = [&](const std::string& name, const std::string& flag, double fallback,
                     const char* why) {
        if (const auto v = k.number(P + name))
            s.set(flag, number_text(*v), fmt::format("{}{} {}", P, name, *v));
        else if (k.absent(P + name))
            s.set(flag, number_text(fallback), fmt::format("no {}{}: {}", P, name, why),
                  Kind::implied);
    };
    value("lr", "--lr", 1e-3, "DeepSpeed's Adam default 0.001");
    value("eps", "--eps", 1e-8, "DeepSpeed's Adam default 1e-8");
    value("weight_decay", "--weight-decay", torch_adam ? (adamw ? 0.01 : 0.0) : 0.0,
          "the Adam class's default");
    const std::string bk = P + "betas";
    if (const json* betas = k.get(bk)) {
        if (!betas->is_array() || betas->size() != 2 || !(*betas)[0].is_number() ||
            !(*betas)[1].is_number())
            k.fail(bk, "must be two numbers, [beta1, beta2], not " + betas->dump());
        s.set("--beta1", number_text((*betas)[0].get<double>()), bk + " " + betas->dump());
        s.set("--beta2", number_text((*betas)[1].get<double>()), bk + " " + betas->dump());
    } else if (k.absent(bk)) {
        s.set("--beta1", "0.9", "no " + bk + ": DeepSpeed's Adam default [0.9, 0.999]",
              Kind::implied);
        s.set("--beta2", "0.999", "no " + bk + ": DeepSpeed's Adam default [0.9, 0.999]",
              Kind::implied);
    }
    const DsSetting* wd = s.find("--weight-decay");
    if (!adamw && wd && std::strtod(wd->value.c_str(), nullptr) != 0)
        k.fail(P + "adam_w_mode",
               "false with weight_decay " + wd->value +
                   " asks for Adam's L2 decay (added to the gradient); shardlab's AdamW decays "
                   "the weights directly: set adam_w_mode true, or weight_decay 0");
}

// WarmupLR / WarmupDecayLR: the peak is warmup_max_lr, the floor warmup_min_lr.
void map_warmup_lrs(JsonKeys& k, Settings& s, const std::string& type) {
    const std::string P = "scheduler.params.";
    const DsSetting* opt_lr = s.find("--lr");
    const auto max_lr = k.number(P + "warmup_max_lr");
    if (max_lr) {
        if (opt_lr && opt_lr->kind == Kind::given && opt_lr->value != number_text(*max_lr))
            s.note(fmt::format("{}warmup_max_lr {} sets the peak learning rate, as in DeepSpeed; "
                               "{} is not used",
                               P, *max_lr, opt_lr->source));
        s.set("--lr", number_text(*max_lr), fmt::format("{}warmup_max_lr {}", P, *max_lr));
    } else if (k.absent(P + "warmup_max_lr")) {
        s.note(fmt::format("{} without warmup_max_lr: DeepSpeed would peak at its default 0.001; "
                           "shardlab peaks at --lr ({})",
                           type, opt_lr ? opt_lr->source : "its flag or default"));
    }
    const auto min_lr = k.number(P + "warmup_min_lr");
    if (min_lr && *min_lr != 0)
        s.note(fmt::format("{}warmup_min_lr {}: DeepSpeed warms up from it, shardlab from 0", P,
                           *min_lr));
    if (type != "WarmupDecayLR") return;
    // DeepSpeed's linear decay ends at warmup_min_lr: as a fraction of the peak.
    if (!min_lr || *min_lr == 0) {
        s.set("--min-lr-ratio", "0", "WarmupDecayLR decays to warmup_min_lr 0",
              min_lr ? Kind::given : Kind::implied);
    } else {
        if (!max_lr || *max_lr <= 0)
            k.fail(P + "warmup_min_lr", "is not 0, so shardlab needs a positive warmup_max_lr "
                                        "too (the decay's floor is a fraction of the peak)");
        s.set("--min-lr-ratio", number_text(*min_lr / *max_lr),
              fmt::format("WarmupDecayLR floor warmup_min_lr {} / warmup_max_lr {}", *min_lr,
                          *max_lr));
    }
}

// scheduler: WarmupLR (then constant), WarmupDecayLR (then linear), WarmupCosineLR (then cosine).
void map_scheduler(JsonKeys& k, Settings& s) {
    if (k.absent("scheduler")) return; // the client's schedule: shardlab's flags stand
    const std::string P = "scheduler.params.";
    const auto type = k.text("scheduler.type").value_or("");
    const char* schedule = type == "WarmupLR"         ? "constant"
                           : type == "WarmupDecayLR"  ? "linear"
                           : type == "WarmupCosineLR" ? "cosine"
                                                      : nullptr;
    if (!schedule)
        k.fail("scheduler.type",
               (type.empty() ? std::string("is missing") : "\"" + type + "\" is not supported") +
                   ": use WarmupLR, WarmupDecayLR or WarmupCosineLR (or remove "
                   "the scheduler section and give --schedule)");
    s.set("--schedule", schedule, "scheduler.type " + type);
    // lr_schedules.py warms up over max(2, warmup_num_steps) steps; 1000 when not given.
    if (const auto w = k.whole(P + "warmup_num_steps", 0))
        s.set("--warmup", std::to_string(std::max(2LL, *w)),
              fmt::format("{}warmup_num_steps {}{}", P, *w,
                          *w < 2 ? " (DeepSpeed warms up over at least 2)" : ""));
    else if (k.absent(P + "warmup_num_steps"))
        s.set("--warmup", "1000", "no warmup_num_steps: DeepSpeed's default 1000", Kind::implied);
    const auto warmup_type = k.text(P + "warmup_type");
    if (warmup_type && *warmup_type != "log" && *warmup_type != "linear")
        k.fail(P + "warmup_type", "is \"" + *warmup_type + "\"; use \"linear\" (or \"log\")");
    if (warmup_type.value_or("log") == "log" && !k.is_auto(P + "warmup_type"))
        s.note(std::string(warmup_type ? "warmup_type \"log\""
                                       : "no warmup_type (DeepSpeed's default is \"log\")") +
               ": shardlab warms up linearly, so the warmup steps' learning rates differ; set "
               "\"warmup_type\": \"linear\" to match");
    if (type != "WarmupLR") { // WarmupLR has no end
        if (const auto total = k.whole(P + "total_num_steps", 1))
            s.set("--steps", std::to_string(*total),
                  fmt::format("{}total_num_steps {}", P, *total));
    }
    if (type == "WarmupCosineLR") {
        if (const auto r = k.number(P + "warmup_min_ratio"); r && *r != 0)
            s.note(fmt::format("{}warmup_min_ratio {}: DeepSpeed warms up from it, shardlab from 0",
                               P, *r));
        if (const auto r = k.number(P + "cos_min_ratio"))
            s.set("--min-lr-ratio", number_text(*r), fmt::format("{}cos_min_ratio {}", P, *r));
        else if (k.absent(P + "cos_min_ratio"))
            s.set("--min-lr-ratio", "0.0001", "no cos_min_ratio: DeepSpeed's default 0.0001",
                  Kind::implied);
    } else {
        map_warmup_lrs(k, s, type);
    }
}

std::string read_text(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        throw UsageError("deepspeed config '" + path + "' " +
                         (std::filesystem::exists(path, ec) ? "is not a file" : "does not exist") +
                         "; give --deepspeed-config a DeepSpeed JSON file");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw UsageError("deepspeed config '" + path + "' cannot be opened (" +
                         std::strerror(errno) + "); check its permissions");
    return read_rest(in);
}

// "0.10000000149011612" (a float flag's value read back) and "0.1" are the same setting.
bool same_value(std::string a, std::string b) {
    for (std::string* t : {&a, &b}) {
        if (*t == "true") *t = "1";
        if (*t == "false") *t = "0";
    }
    char *ea = nullptr, *eb = nullptr;
    const double x = std::strtod(a.c_str(), &ea), y = std::strtod(b.c_str(), &eb);
    if (!a.empty() && !b.empty() && *ea == '\0' && *eb == '\0') // equal as the float flags hold
        return x == y || std::fabs(x - y) <= 1e-7 * std::fmax(std::fabs(x), std::fabs(y));
    return a == b;
}

std::string last_result(const CLI::Option& opt) {
    return opt.results().empty() ? std::string("true") : opt.results().back(); // a bare flag
}

std::string joined(const std::vector<std::string>& items, const char* sep = ", ") {
    std::string out;
    for (const std::string& i : items) out += (out.empty() ? "" : sep) + i;
    return out;
}

} // namespace

DsMapping map_deepspeed_config(const json& doc, int world_size, const std::string& path) {
    if (!doc.is_object())
        throw UsageError("deepspeed config '" + path + "' must be a JSON object ({...}), not " +
                         std::string(doc.type_name()));
    JsonKeys k(doc, "deepspeed config '" + path + "'");
    Settings s;
    map_zero(k, s);
    map_precision(k, s);
    map_batch(k, s, world_size);
    map_clipping(k, s);
    map_optimizer(k, s);
    map_scheduler(k, s); // after the optimizer: warmup_max_lr replaces optimizer.params.lr
    s.m.ignored = k.unread();
    s.m.automatic = k.automatic();
    return s.m;
}

namespace {

struct Applied {
    std::vector<std::string> set, flags_win; // "--zero 2"; "--zero 1 (the file: ...)"
};

// Each setting onto its option, by the rules in the header.
Applied apply_settings(CLI::App& cmd, const DsMapping& m, const std::set<std::string>& cli,
                       const std::string& config_file, const std::string& where) {
    Applied a;
    for (const DsSetting& s : m.settings) {
        CLI::Option* opt = cmd.get_option(s.flag);
        const std::string name = s.flag.substr(2);
        if (cli.count(s.flag)) {
            if (s.kind == Kind::given) // DeepSpeed's defaults and checks go unmentioned
                a.flags_win.push_back(
                    fmt::format("{} {} (the file: {})", s.flag, last_result(*opt), s.source));
        } else if (opt->count() > 0) { // set by --config: the two files must agree
            if (s.kind != Kind::implied && !same_value(last_result(*opt), s.value))
                throw UsageError(fmt::format(
                    "--config '{}' sets {} = {} but {} gives {} {} ({}); make the two files "
                    "agree, or give {} on the command line, which wins over both",
                    config_file, name, last_result(*opt), where, s.flag, s.value, s.source,
                    s.flag));
        } else if (s.kind != Kind::check) {
            set_option_text(*opt, s.value, where + " (" + s.source + ")", name);
            a.set.push_back(s.flag + " " + s.value);
        }
    }
    return a;
}

// The startup lines: set, won by flags, ignored, "auto", and the notes.
std::vector<std::string> summary(const DsMapping& m, const Applied& a, const TrainOptions& o,
                                 int world_size) {
    std::vector<std::string> lines{"deepspeed-config '" + o.deepspeed_config +
                                   "' sets: " + (a.set.empty() ? "nothing" : joined(a.set, " "))};
    if (!a.flags_win.empty())
        lines.push_back("deepspeed-config: the command line wins: " + joined(a.flags_win, "; "));
    if (!m.ignored.empty()) lines.push_back("deepspeed-config: ignored keys: " + joined(m.ignored));
    if (!m.automatic.empty())
        lines.push_back("deepspeed-config: \"auto\" keys left to flags and defaults: " +
                        joined(m.automatic));
    std::vector<std::string> notes = m.notes;
    const long long batch =
        o.global_batch ? o.global_batch : times(times(o.micro_batch, o.grad_accum), world_size);
    if (m.train_batch_size && batch != *m.train_batch_size)
        notes.push_back(fmt::format("the command line makes the global batch {} sequences, not "
                                    "train_batch_size {}",
                                    batch, *m.train_batch_size));
    for (const std::string& n : notes) lines.push_back("deepspeed-config: note: " + n);
    return lines;
}

} // namespace

std::vector<std::string> apply_deepspeed_text(CLI::App& cmd, const TrainOptions& o,
                                              const std::set<std::string>& cli, int world_size,
                                              std::string_view text) {
    const std::string where = "deepspeed config '" + o.deepspeed_config + "'";
    json doc;
    try {
        doc = parse_json_bounded(text, where);
    } catch (const json::exception& e) { // a syntax error, or a number past double (406)
        throw UsageError(where + " is not valid JSON (" + e.what() + ")");
    }
    const DsMapping m = map_deepspeed_config(doc, world_size, o.deepspeed_config);
    const Applied a = apply_settings(cmd, m, cli, o.config_file, where);
    return summary(m, a, o, world_size);
}

std::vector<std::string> apply_deepspeed_config(CLI::App& cmd, const TrainOptions& o,
                                                const std::set<std::string>& cli, int world_size) {
    return apply_deepspeed_text(cmd, o, cli, world_size, read_text(o.deepspeed_config));
}

} // namespace shardlab
