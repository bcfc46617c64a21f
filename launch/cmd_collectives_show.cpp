// `shardlab collectives show`: a teaching walkthrough. Every rank runs the real algorithm with a
// trace attached; rank 0 collects the traces and prints, step by step, what each rank sent,
// received and holds, then each rank's measured bytes beside docs/COLLECTIVES.md's formula — in
// all and per link class (`--ranks-per-node K` declares the nodes; otherwise they are detected).
// `--algo hd|hier` walks through halving-doubling and the two-level algorithms the same way.
#include "comm/algorithm_table.h"
#include "comm/chunking.h"
#include "comm/comm_model.h"
#include "comm/communicator.h"
#include "comm/gather_to_root.h"
#include "core/error.h"
#include "launch/cli_util.h"
#include "launch/commands.h"
#include "launch/flag_checks.h"
#include "model/backend.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mpi.h>

#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

namespace shardlab {

namespace {
struct ShowOptions {
    std::string op = "allreduce";
    std::optional<std::size_t> count; // not given: two elements per rank; 0 is the empty case
    int root = 0;
    std::string algo = "ring";
    int ranks_per_node = 0; // 0: detect
};

constexpr std::size_t kMaxShown = 64; // elements: more do not fit a terminal's line

// Elements print as numbers; never-written ones (still NaN) as ".". Chunk borders as "|".
std::string format_buffer(const void* data, std::size_t count, DType t, const Chunking* ch) {
    std::string s = "[";
    int next_border = 1;
    for (std::size_t i = 0; i < count; ++i) {
        while (ch && next_border < ch->n && ch->offset(next_border) == i) {
            s += " |";
            ++next_border;
        }
        float v = load_as_f32(data, t, i);
        s += std::isnan(v) ? " ." : fmt::format(" {:g}", v);
    }
    return s + " ]";
}

// Records one line per event, keyed by (phase, step), to be printed by rank 0.
class ShowTrace : public CollectiveTrace {
  public:
    ShowTrace(std::size_t full_count, int n) : full_{full_count, n} {}
    void phase(const char* name) override { lines_ << "P\t" << name << "\n"; }
    void transfer(int step, bool is_send, int peer, int chunk, std::size_t count) override {
        const std::string what = chunk < 0 ? fmt::format("{} el", count) // not one chunk
                                           : fmt::format("chunk {} ({} el)", chunk, count);
        lines_ << "S\t" << step << "\t"
               << fmt::format("{} {} {} rank {}", is_send ? "send" : "recv", what,
                              is_send ? "->" : "<-", peer)
               << "\n";
    }
    void buffer(int step, const char* label, const void* data, std::size_t count,
                DType t) override {
        const Chunking* ch = count == full_.count ? &full_ : nullptr;
        lines_ << "S\t" << step << "\t" << label << " = " << format_buffer(data, count, t, ch)
               << "\n";
    }
    std::string text() const { return lines_.str(); }

  private:
    Chunking full_;
    std::ostringstream lines_;
};

// A rank's trace, parsed into phases, each a map step -> lines.
using Steps = std::map<int, std::vector<std::string>>;
std::vector<std::pair<std::string, Steps>> parse_trace(const std::string& text) {
    std::vector<std::pair<std::string, Steps>> phases;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string kind, a;
        std::getline(f, kind, '\t');
        std::getline(f, a, '\t');
        if (kind == "P") {
            phases.push_back({a, {}});
            continue;
        }
        std::string rest;
        std::getline(f, rest);
        if (phases.empty()) phases.push_back({"", {}});
        phases.back().second[std::stoi(a)].push_back(rest);
    }
    return phases;
}

std::string formula_text(CollectiveOp op, Algo a, bool is_root) {
    if (a == Algo::hd) return "schedule (COLLECTIVES.md)";
    if (a == Algo::hier) return "two-level (COLLECTIVES.md)";
    switch (op) {
    case CollectiveOp::allgather:
        return "S - c(r+1)";
    case CollectiveOp::reduce_scatter:
        return "S - c(r)";
    case CollectiveOp::allreduce:
        return "2S - c(r) - c(r+1)";
    case CollectiveOp::broadcast:
        return is_root ? "2S - c(root) - c(r+1)" : "S - c(r+1)";
    case CollectiveOp::reduce:
        return is_root ? "S - c(root)" : "S";
    case CollectiveOp::gather:
        return is_root ? "0" : "c(r)";
    case CollectiveOp::scatter:
        return is_root ? "S - c(root)" : "0";
    }
    return "";
}

// Rank r's contribution at global element i: readable, distinct per rank.
float show_input(int rank, std::size_t i) {
    return float((rank + 1) * 100 + int(i));
}

int run_show(const ShowOptions& o) {
    const CollectiveOp op = parse_op(o.op);
    const Algo algo = parse_algo(o.algo);
    if (algo == Algo::native)
        throw UsageError("--algo native cannot be shown step by step: the library's steps are "
                         "not visible; use ring, hd or hier");
    find_algorithm(op, algo); // a clear error before any rank starts
    const auto backend = make_cpu_backend(1);
    const auto communicator = backend->communicator(MPI_COMM_WORLD);
    Communicator& comm = *communicator;
    const int n = comm.size(), r = comm.rank();
    comm.set_node_layout(NodeLayout::from_flag(comm.mpi_comm(), o.ranks_per_node));
    const NodeLayout& layout = comm.node_layout();
    const std::size_t count = o.count.value_or(std::size_t(2 * n));
    if (count > kMaxShown && o.count)
        throw UsageError("--count " + std::to_string(count) +
                         " is too long to print; the walkthrough takes at most 64 elements (use "
                         "`collectives bench` for large buffers)");
    if (count > kMaxShown)
        throw UsageError(fmt::format("the default buffer of 2 elements per rank is {} elements on "
                                     "{} ranks, too long to print (at most 64); give a smaller "
                                     "--count, or run on at most 32 ranks",
                                     count, n));
    if (o.root < 0 || o.root >= n)
        throw UsageError(
            fmt::format("--root {} does not exist with N={} ranks; use 0..{}", o.root, n, n - 1));

    const Chunking ch{count, n};
    const CallSizes sz = call_sizes(op, count, n, r, o.root);
    std::vector<float> send(std::max<std::size_t>(sz.send, 1)),
        recv(std::max<std::size_t>(sz.recv, 1), NAN);
    const bool chunk_input = op == CollectiveOp::allgather || op == CollectiveOp::gather;
    for (std::size_t j = 0; j < sz.send; ++j)
        send[j] = show_input(r, (chunk_input ? ch.offset(r) : 0) + j);

    ShowTrace trace(count, n);
    comm.set_trace(&trace);
    comm.run({op, send.data(), recv.data(), count, DType::f32, ReduceOp::sum, o.root}, algo);
    comm.synchronize(); // the trace is written in stream order
    comm.set_trace(nullptr);
    const OpStats st = comm.stats().get(stats_key(op, algo));

    std::string summary =
        fmt::format("  send {}\n", format_buffer(send.data(), sz.send, DType::f32,
                                                 sz.send == count ? &ch : nullptr));
    std::string result =
        format_buffer(recv.data(), sz.recv, DType::f32, sz.recv == count ? &ch : nullptr);
    std::string bytes = fmt::format("{} {} {}", st.bytes_sent, st.sent_by_link.intra_node,
                                    st.sent_by_link.inter_node);
    auto inputs = gather_to_root(summary, comm.mpi_comm());
    auto traces = gather_to_root(trace.text(), comm.mpi_comm());
    auto results = gather_to_root(result, comm.mpi_comm());
    auto sent = gather_to_root(bytes, comm.mpi_comm());
    if (r != 0) return 0;

    std::vector<std::size_t> sizes;
    for (int j = 0; j < n; ++j) sizes.push_back(ch.size(j));
    fmt::print("{} ({}) on {} ranks ({}): S = {} fp32 elements = {} B, cut into chunks of {} "
               "elements{}\n\n",
               op_name(op), algo_name(algo), n, layout.describe(), count, count * 4,
               fmt::join(sizes, ","), op_has_root(op) ? fmt::format(", root {}", o.root) : "");
    fmt::print("inputs:\n");
    for (int j = 0; j < n; ++j) fmt::print("  rank {}:{}", j, inputs[j]);
    std::vector<std::vector<std::pair<std::string, Steps>>> parsed;
    for (const auto& t : traces) parsed.push_back(parse_trace(t));
    for (std::size_t p = 0; p < parsed[0].size(); ++p) {
        fmt::print("\nphase: {}\n", parsed[0][p].first);
        std::map<int, bool> steps;
        for (const auto& pr : parsed)
            if (p < pr.size())
                for (const auto& [s, _] : pr[p].second) steps[s] = true;
        for (const auto& [s, _] : steps) {
            fmt::print("  {}\n", s < 0 ? "start" : fmt::format("step {}", s));
            for (int j = 0; j < n; ++j) {
                if (p >= parsed[j].size()) continue;
                auto it = parsed[j][p].second.find(s);
                if (it == parsed[j][p].second.end()) continue;
                fmt::print("    rank {}: {}\n", j, fmt::join(it->second, "; "));
            }
        }
    }
    fmt::print("\nresult (recv buffers):\n");
    for (int j = 0; j < n; ++j)
        fmt::print("  rank {}: {}\n", j,
                   call_sizes(op, count, n, j, o.root).recv ? results[j] : "(none)");
    fmt::print("\nbytes sent per rank (measured at the transport vs docs/COLLECTIVES.md; c(j) = "
               "chunk j's bytes), and by link class, intra-node / inter-node:\n");
    for (int j = 0; j < n; ++j) {
        const LinkBytes predicted = predicted_bytes_sent(op, algo, count, 4, layout, j, o.root);
        std::uint64_t measured = 0;
        LinkBytes link;
        std::istringstream(sent[j]) >> measured >> link.intra_node >> link.inter_node;
        const bool ok = measured == predicted.total() && link == predicted;
        fmt::print("  rank {}: {:>5} B   {:<26} = {:>5} B   node {}: intra {:>4} / inter {:>4} B "
                   "(predicted {} / {})   {}\n",
                   j, measured, formula_text(op, algo, j == o.root), predicted.total(),
                   layout.node(j), link.intra_node, link.inter_node, predicted.intra_node,
                   predicted.inter_node, ok ? "ok" : "MISMATCH");
    }
    return 0;
}
} // namespace

CommandRunner add_collectives_show_command(CLI::App& cmd) {
    auto o = std::make_shared<ShowOptions>();
    cmd.add_option("--op", o->op,
                   "allgather, reduce_scatter, allreduce, broadcast, reduce, gather, scatter")
        ->required()
        ->check(parsed_by([](const std::string& s) { parse_op(s); }, "OP"));
    cmd.add_option("--count", o->count,
                   "Elements in the whole buffer S, 0 to 64 (default: 2 per rank)")
        ->check(at_least(0));
    cmd.add_option("--root", o->root, "Root rank of rooted operations")->check(at_least(0));
    cmd.add_option("--algo", o->algo,
                   "ring (default), hd (halving-doubling all-reduce) or hier (two-level "
                   "all-gather / reduce-scatter / all-reduce)")
        ->check(parsed_by([](const std::string& s) { parse_algo(s); }, "ALGO"));
    cmd.add_option("--ranks-per-node", o->ranks_per_node,
                   "Declare nodes of K consecutive ranks (default: detect shared memory)")
        ->check(at_least(0));
    return [o] { return run_show(*o); };
}

} // namespace shardlab
