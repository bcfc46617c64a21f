// `shardlab collectives bench`: nccl-tests-style sweep over message sizes. For each op, algorithm
// and size: one checked call (results against the exact expectation, bytes sent per rank from
// CommStats, in all and per link class, held against comm_model's prediction), then warmup and
// timed iterations. Time is the slowest rank's mean per call. `--ranks-per-node K` declares the
// nodes (default: detected); (op, algo) pairs the algorithm table lacks are skipped with a note.
#include "comm/algorithm_table.h"
#include "comm/comm_model.h"
#include "comm/communicator.h"
#include "core/error.h"
#include "launch/cli_util.h"
#include "launch/collective_check.h"
#include "launch/commands.h"
#include "launch/device_options.h"
#include "launch/flag_checks.h"
#include "launch/sweep_options.h"
#include "measure/collective_timing.h"
#include "measure/copy_rate.h"
#include "measure/slowest_rank.h"
#include "model/backend.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mpi.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <vector>

namespace shardlab {

namespace {
struct BenchOptions {
    std::string ops = "allreduce", algos = "ring", dtype = "fp32", json_path;
    SweepOptions sweep{"1M", "64M"};
    int root = 0;
    DeviceOptions device;
};

struct BenchRow {
    CollectiveOp op;
    Algo algo;
    DType dtype;
    int ranks;
    std::size_t bytes, count, wrong;
    double time_us, algbw, busbw;
    std::vector<std::uint64_t> sent_per_rank;  // empty when not measurable (native)
    std::vector<LinkBytes> by_link, predicted; // per rank; empty when not measurable
    bool model_ok = true;                      // measured == predicted per rank and link class
};

BenchRow bench_one(Communicator& comm, MemoryTracker& tracker, CollectiveCall call, Algo algo,
                   const BenchOptions& o) {
    const int n = comm.size(), r = comm.rank();
    const CallSizes sz = call_sizes(call.op, call.count, n, r, call.root);
    const std::size_t es = dtype_size(call.dtype);
    // The inputs are made and the results checked on the host, in copies of the device buffers.
    std::vector<char> host_send(sz.send * es), host_recv(sz.recv * es);
    CollectiveCall on_host = call;
    on_host.send = host_send.data();
    on_host.recv = host_recv.data();
    fill_check_inputs(on_host, n, r);
    Allocation send = tracker.allocate(sz.send * es, Category::workspace, comm.stream());
    Allocation recv = tracker.allocate(sz.recv * es, Category::workspace, comm.stream());
    comm.stream().upload(send.data(), host_send.data(), host_send.size());
    comm.stream().upload(recv.data(), host_recv.data(), host_recv.size());
    call.send = send.data();
    call.recv = recv.data();

    comm.stats().reset();
    comm.run(call, algo);
    comm.stream().memcpy(host_recv.data(), recv.data(), host_recv.size());
    comm.synchronize();
    std::size_t wrong = count_wrong(on_host, n, r);
    const OpStats one = comm.stats().get(stats_key(call.op, algo));
    const double seconds = collective_seconds(comm, call, algo, o.sweep.warmup, o.sweep.iters);

    BenchRow row{call.op, algo, call.dtype, n,   call.count * es, call.count, 0, 0, 0, 0,
                 {},      {},   {},         true};
    unsigned long long w = wrong;
    MPI_Allreduce(MPI_IN_PLACE, &w, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm.mpi_comm());
    row.wrong = w;
    std::vector<unsigned long long> sent(n);
    unsigned long long mine = one.bytes_sent;
    MPI_Allgather(&mine, 1, MPI_UNSIGNED_LONG_LONG, sent.data(), 1, MPI_UNSIGNED_LONG_LONG,
                  comm.mpi_comm());
    unsigned long long link[2] = {one.sent_by_link.intra_node, one.sent_by_link.inter_node};
    std::vector<unsigned long long> links(2 * std::size_t(n));
    MPI_Allgather(link, 2, MPI_UNSIGNED_LONG_LONG, links.data(), 2, MPI_UNSIGNED_LONG_LONG,
                  comm.mpi_comm());
    if (one.bytes_measured) {
        row.sent_per_rank.assign(sent.begin(), sent.end());
        for (int j = 0; j < n; ++j) {
            row.by_link.push_back({links[2 * std::size_t(j)], links[2 * std::size_t(j) + 1]});
            row.predicted.push_back(predicted_bytes_sent(call.op, algo, call.count, es,
                                                         comm.node_layout(), j, call.root));
            row.model_ok = row.model_ok && row.by_link.back() == row.predicted.back() &&
                           row.sent_per_rank[std::size_t(j)] == row.predicted.back().total();
        }
    }
    row.time_us = seconds * 1e6;
    row.algbw = seconds > 0 ? double(row.bytes) / seconds / 1e9 : 0;
    row.busbw = row.algbw * bus_bandwidth_factor(call.op, n);
    return row;
}

std::string sent_text(const BenchRow& row) {
    if (row.sent_per_rank.empty()) return "n/a (inside the library)";
    std::string inter;
    for (const LinkBytes& b : row.by_link)
        inter += (inter.empty() ? "" : "/") + std::to_string(b.inter_node);
    return fmt::format("{}  inter {}  {}", fmt::join(row.sent_per_rank, "/"), inter,
                       row.model_ok ? "=model" : "MODEL MISMATCH");
}

nlohmann::json links_json(const std::vector<LinkBytes>& v) {
    if (v.empty()) return nullptr;
    nlohmann::json a = nlohmann::json::array();
    for (const LinkBytes& b : v)
        a.push_back({{"intra_node", b.intra_node}, {"inter_node", b.inter_node}});
    return a;
}

nlohmann::json row_json(const BenchRow& row) {
    nlohmann::json sent = nullptr;
    if (!row.sent_per_rank.empty()) sent = row.sent_per_rank;
    return {{"op", op_name(row.op)},
            {"algo", algo_name(row.algo)},
            {"dtype", dtype_name(row.dtype)},
            {"ranks", row.ranks},
            {"bytes", row.bytes},
            {"count", row.count},
            {"time_us", row.time_us},
            {"algbw_gbps", row.algbw},
            {"busbw_gbps", row.busbw},
            {"wrong", row.wrong},
            {"bytes_sent_per_rank", sent},
            {"bytes_by_link_per_rank", links_json(row.by_link)},
            {"predicted_bytes_by_link_per_rank", links_json(row.predicted)}};
}

// A ceiling to read the bandwidths against: every rank copying `bytes` within its device at once
// (on a CPU that is what a shared-memory transport does underneath). Returns the slowest rank's
// copy rate, bytes copied per second.
double memcpy_gbps(Communicator& comm, MemoryTracker& tracker, std::size_t bytes, int iters) {
    Allocation a = tracker.allocate(bytes, Category::workspace, comm.stream());
    Allocation b = tracker.allocate(bytes, Category::workspace, comm.stream());
    MPI_Barrier(comm.mpi_comm());
    const double seconds = copy_seconds(comm.stream(), b.data(), a.data(), bytes, iters);
    return double(bytes) / slowest_rank(seconds, comm.mpi_comm()) / 1e9;
}

// The sweep's sizes, refusing a -b below one element: it would run 0-element benchmarks, and
// sizes that round to the same count would repeat rows. Above one element, sizes a factor >= 2
// apart always differ in count.
std::vector<std::size_t> bench_sizes(const BenchOptions& o) {
    std::vector<std::size_t> sizes = sweep_sizes(o.sweep);
    const DType dtype = parse_dtype(o.dtype);
    if (sizes.front() < dtype_size(dtype))
        throw UsageError(fmt::format("-b {} is smaller than one {} element ({} B); the sweep "
                                     "measures whole elements: give -b {} or more",
                                     o.sweep.min_bytes, dtype_name(dtype), dtype_size(dtype),
                                     dtype_size(dtype)));
    return sizes;
}

int run_bench(const BenchOptions& o) {
    // Validate everything before the first message, so a bad flag exits cleanly on every rank.
    std::vector<CollectiveOp> ops;
    for (const auto& name : split_list(o.ops)) ops.push_back(parse_op(name));
    std::vector<Algo> algos;
    for (const auto& name : split_list(o.algos)) algos.push_back(parse_algo(name));
    const DType dtype = parse_dtype(o.dtype);
    const std::vector<std::size_t> sizes = bench_sizes(o);
    const std::size_t hi = sizes.back();
    if (ops.empty() || algos.empty())
        throw UsageError("--op and --algo need at least one name each");
    if (!o.json_path.empty()) check_json_output(o.json_path, "--json"); // not after the sweep

    DeviceOptions device = o.device;
    if (device.threads == 0) device.threads = 1; // the transport copies; no compute to share
    const auto backend = make_backend(device, MPI_COMM_WORLD);
    const auto communicator = backend->communicator(MPI_COMM_WORLD);
    Communicator& comm = *communicator;
    comm.set_node_layout(NodeLayout::from_flag(comm.mpi_comm(), o.sweep.ranks_per_node));
    MemoryTracker& tracker = backend->context().tracker();
    if (o.root < 0 || o.root >= comm.size())
        throw UsageError(fmt::format("--root {} does not exist with N={} ranks; use 0..{}", o.root,
                                     comm.size(), comm.size() - 1));
    const bool lead = comm.rank() == 0;
    const double copy_rate = memcpy_gbps(comm, tracker, hi, std::max(2, o.sweep.iters / 2));
    if (lead)
        fmt::print("# memcpy ceiling: {:.2f} GB/s per rank ({} ranks copying {} B at once)\n",
                   copy_rate, comm.size(), hi);
    if (lead)
        fmt::print(
            "# shardlab collectives bench: {} ranks ({}) on {}, {}, iters {}, warmup {}; GB/s = "
            "1e9 B/s\n"
            "# {:>14} {:>6} {:>12} {:>11} {:>5} {:>11} {:>8} {:>8} {:>6}  {}\n",
            comm.size(), comm.node_layout().describe(), o.device.device, dtype_name(dtype),
            o.sweep.iters, o.sweep.warmup, "op", "algo", "size(B)", "count", "type", "time(us)",
            "algbw", "busbw", "#wrong", "sent/rank(B)");
    nlohmann::json rows = nlohmann::json::array();
    int model_mismatches = 0;
    for (CollectiveOp op : ops)
        for (Algo algo : algos) {
            if (!has_algorithm(op, algo)) {
                if (lead) fmt::print("# {} has no {}: skipped\n", algo_name(algo), op_name(op));
                continue;
            }
            for (std::size_t bytes : sizes) {
                CollectiveCall call{op,    nullptr,       nullptr, bytes / dtype_size(dtype),
                                    dtype, ReduceOp::sum, o.root};
                BenchRow row = bench_one(comm, tracker, call, algo, o);
                rows.push_back(row_json(row));
                if (lead) {
                    fmt::print("  {:>14} {:>6} {:>12} {:>11} {:>5} {:>11.1f} {:>8.2f} {:>8.2f} "
                               "{:>6}  {}\n",
                               op_name(op), algo_name(algo), row.bytes, row.count,
                               dtype_name(dtype), row.time_us, row.algbw, row.busbw, row.wrong,
                               sent_text(row));
                    std::fflush(stdout);
                }
                model_mismatches += row.model_ok ? 0 : 1;
            }
        }
    std::size_t total_wrong = 0;
    for (const auto& row : rows) total_wrong += row["wrong"].get<std::size_t>();
    if (lead && !o.json_path.empty()) {
        write_json_file(o.json_path, rows);
    }
    if (model_mismatches > 0) {
        if (lead)
            fmt::print(stderr, "shardlab: {} rows whose bytes differ from comm_model's\n",
                       model_mismatches);
        return 1;
    }
    if (total_wrong > 0) {
        if (lead)
            fmt::print(stderr, "shardlab: {} wrong elements in total: a collective is broken\n",
                       total_wrong);
        return 1;
    }
    return 0;
}
} // namespace

CommandRunner add_collectives_bench_command(CLI::App& cmd) {
    auto o = std::make_shared<BenchOptions>();
    cmd.add_option("--op", o->ops,
                   "Operations, comma-separated: allgather, reduce_scatter, "
                   "allreduce, broadcast, reduce, gather, scatter")
        ->check(parsed_by([](const std::string& s) { parse_op(s); }, "OPS", true));
    cmd.add_option("--algo", o->algos,
                   "Algorithms, comma-separated: ring (shardlab's plain ring), hd "
                   "(halving-doubling all-reduce), hier (two-level), native (the transport's: "
                   "MPI's or NCCL's)")
        ->check(parsed_by([](const std::string& s) { parse_algo(s); }, "ALGOS", true));
    cmd.add_option("--dtype", o->dtype, "fp32 | bf16 | fp16")
        ->check(parsed_by([](const std::string& s) { parse_dtype(s); }, "DTYPE"));
    add_sweep_options(cmd, o->sweep);
    cmd.add_option("--root", o->root, "Root rank of rooted operations")->check(at_least(0));
    cmd.add_option("--json", o->json_path, "Also write the rows to this JSON file");
    add_device_options(cmd, o->device);
    // The sizes against the dtype, before MPI starts: one message, not one per rank.
    cmd.parse_complete_callback([o] {
        try {
            bench_sizes(*o);
        } catch (const std::exception& e) { // a UsageError; nothing may escape CLI11's parse
            throw CLI::ValidationError(e.what());
        }
    });
    return [o] { return run_bench(*o); };
}

} // namespace shardlab
