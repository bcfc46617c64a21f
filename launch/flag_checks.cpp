// The validators' arithmetic and their messages.
#include "launch/flag_checks.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace shardlab {

namespace {
std::string bound_text(double v) {
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    std::ostringstream s;
    s << v;
    return s.str();
}
} // namespace

namespace {
// in_range and in_fp32_range: `fp32` checks the value once rounded to fp32, how it is kept.
CLI::Validator range_check(double lo, double hi, bool lo_open, bool hi_open, bool fp32) {
    const std::string range = std::string(lo_open ? "(" : "[") + bound_text(lo) + ", " +
                              bound_text(hi) + (hi_open || std::isinf(hi) ? ")" : "]");
    const auto inside = [=](double v) {
        return std::isfinite(v) && (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
    };
    return CLI::Validator(
        [=](std::string& text) -> std::string {
            double v = 0;
            if (!CLI::detail::lexical_cast(text, v))
                return "'" + text + "' is not a number; use a number in " + range;
            if (!inside(v)) return text + " is not in " + range + "; use a number in " + range;
            const double kept = double(float(v));
            if (fp32 && !inside(kept))
                return text + " is " + bound_text(kept) + " in fp32, the type it is kept in, " +
                       "which is not in " + range + "; use a number in " + range +
                       " that fp32 holds";
            return "";
        },
        "in " + range);
}
} // namespace

CLI::Validator in_range(double lo, double hi, bool lo_open, bool hi_open) {
    return range_check(lo, hi, lo_open, hi_open, false);
}

CLI::Validator in_fp32_range(double lo, double hi, bool lo_open, bool hi_open) {
    return range_check(lo, hi, lo_open, hi_open, true);
}

CLI::Validator at_least(long long lo) {
    return CLI::Validator(
        [=](std::string& text) -> std::string {
            long long v = 0;
            if (!CLI::detail::lexical_cast(text, v)) return "'" + text + "' is not a whole number";
            return v >= lo ? ""
                           : text + " is below " + std::to_string(lo) + "; use " +
                                 std::to_string(lo) + " or more";
        },
        ">= " + std::to_string(lo));
}

CLI::Validator seed_range() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            const char* kRange = "; use a seed from 0 to 2^64 - 1 (18446744073709551615)";
            if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
                return text + (text.find('-') == 0 ? " is negative" : " is not a whole number") +
                       kRange;
            errno = 0;
            std::strtoull(text.c_str(), nullptr, 10);
            return errno == ERANGE ? text + " is above 2^64 - 1" + kRange : "";
        },
        "0 to 2^64 - 1");
}

CLI::Validator zero_or_in_range(double lo, double hi, const std::string& zero_means) {
    const std::string range = "[" + bound_text(lo) + ", " + bound_text(hi) + "]";
    return CLI::Validator(
        [=](std::string& text) -> std::string {
            double v = 0;
            if (!CLI::detail::lexical_cast(text, v))
                return "'" + text + "' is not a number; use 0 (" + zero_means +
                       ") or a number in " + range;
            const bool ok = v == 0 || (std::isfinite(v) && v >= lo && v <= hi);
            return ok ? ""
                      : text + " is not 0 or in " + range + "; use 0 (" + zero_means +
                            ") or a number in " + range;
        },
        "0 or in " + range);
}

std::vector<std::string> split_list(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ','))
        if (!item.empty()) out.push_back(item);
    return out;
}

CLI::Validator parsed_by(const std::function<void(const std::string&)>& parse,
                         const std::string& what, bool list) {
    return CLI::Validator(
        [=](std::string& text) -> std::string {
            try {
                if (!list) parse(text);
                for (const std::string& name : list ? split_list(text) : std::vector<std::string>{})
                    parse(name);
                return "";
            } catch (const std::exception& e) {
                return e.what();
            }
        },
        what);
}

} // namespace shardlab
