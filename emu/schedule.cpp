// Schedule parsing and the seeded decisions (splitmix64: tiny, and the same on every platform).
#include "emu/schedule.h"

#include "emu/fiber_sanitizers.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <stdexcept>

namespace shardlab::emu {

namespace {
std::uint64_t splitmix(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

std::uint64_t hash_name(const char* s) { // FNV-1a: the kernel's name, not its address
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; ++s) h = (h ^ std::uint8_t(*s)) * 0x100000001b3ull;
    return h;
}
} // namespace

Schedule Schedule::parse(const std::string& text) {
    Schedule s;
    s.text_ = text;
    if (text == "forward") return s;
    if (text == "reverse") {
        s.kind_ = Kind::reverse;
        return s;
    }
    const std::string prefix = "random:";
    if (text.rfind(prefix, 0) == 0 && text.size() > prefix.size()) {
        const std::string digits = text.substr(prefix.size());
        char* end = nullptr;
        s.seed_ = std::strtoull(digits.c_str(), &end, 10);
        if (*end == '\0' && digits.find_first_not_of("0123456789") == std::string::npos) {
            s.kind_ = Kind::random;
            return s;
        }
    }
    throw std::invalid_argument("SHARDLAB_EMU_SCHEDULE=" + text +
                                ": expected forward, reverse or random:SEED (SEED a number)");
}

const Schedule& Schedule::process() {
    return sanitizers::made_once([] {
        const char* env = std::getenv("SHARDLAB_EMU_SCHEDULE");
        Schedule parsed = parse(env && *env ? env : "forward");
        if (parsed.kind_ != Kind::forward)
            std::fprintf(stderr, "emu: SHARDLAB_EMU_SCHEDULE=%s\n", parsed.text_.c_str());
        return parsed;
    });
}

void Schedule::Block::start(const Schedule& s, const char* kernel, std::uint64_t block_linear) {
    kind_ = s.kind_;
    state_ = s.seed_ ^ hash_name(kernel) ^ (block_linear * 0xd6e8feb86659fd93ull);
    order_.clear(); // next_round makes it afresh for this block's kind
}

std::uint64_t Schedule::Block::next() {
    return splitmix(state_);
}

const std::vector<unsigned>& Schedule::Block::next_round(unsigned n) {
    if (order_.size() != n || kind_ == Kind::random) {
        order_.resize(n);
        std::iota(order_.begin(), order_.end(), 0u);
        if (kind_ == Kind::reverse) std::reverse(order_.begin(), order_.end());
        if (kind_ == Kind::random)
            for (unsigned i = n; i > 1; --i) std::swap(order_[i - 1], order_[next() % i]);
    }
    return order_;
}

bool Schedule::Block::yield_now() {
    return kind_ == Kind::random && next() % 4 == 0;
}

} // namespace shardlab::emu
