// The fastest of `reps` timings per size: on a shared machine interference only ever adds time,
// so the minimum is the closest to the link's own cost. Each sample records the ring's steps
// and the bytes a rank sends per step (comm/comm_model.h), the fit's x.
#include "measure/link_calibration.h"

#include "comm/algorithm_table.h"
#include "comm/comm_model.h"
#include "comm/mpi_error.h"
#include "core/error.h"
#include "measure/collective_timing.h"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <memory>

namespace shardlab {

namespace {
constexpr CollectiveOp kOps[] = {CollectiveOp::allgather, CollectiveOp::reduce_scatter,
                                 CollectiveOp::allreduce};

// The samples of one op over the sweep for a communicator of n ranks, seconds not yet measured.
std::vector<CollectiveSample> sweep_samples(CollectiveOp op, const SweepSpec& sw, int n) {
    std::vector<CollectiveSample> v;
    const std::size_t es = dtype_size(sw.dtype);
    for (std::size_t bytes : sw.sizes) {
        const std::size_t count = bytes / es;
        const int steps = ring_steps(op, n);
        v.push_back(
            {count * es, steps, double(ring_bytes_sent(op, count, es, n, 0, 0)) / steps, 0.0});
    }
    return v;
}

double fastest_seconds(Backend& backend, Communicator& comm, CollectiveOp op, std::size_t bytes,
                       const SweepSpec& sw) {
    const std::size_t es = dtype_size(sw.dtype), count = bytes / es;
    const CallSizes sz = call_sizes(op, count, comm.size(), comm.rank(), 0);
    MemoryTracker& tracker = backend.context().tracker();
    Allocation send = tracker.allocate(std::max<std::size_t>(sz.send, 1) * es, Category::workspace,
                                       comm.stream());
    Allocation recv = tracker.allocate(std::max<std::size_t>(sz.recv, 1) * es, Category::workspace,
                                       comm.stream());
    // Written before they are sent: untouched pages would all read as the kernel's zero page.
    Stream& compute = backend.context().compute();
    for (const Allocation* a : {&send, &recv})
        backend.ops().fill(
            compute,
            Tensor{
                a->data(), sw.dtype, {std::int64_t(a->bytes() / es)}, backend.context().device()},
            1.0f);
    compute.synchronize();
    const CollectiveCall call{op, send.data(), recv.data(), count, sw.dtype, ReduceOp::sum, 0};
    double best = std::numeric_limits<double>::infinity();
    for (int r = 0; r < sw.reps; ++r)
        best = std::min(best, collective_seconds(comm, call, Algo::ring, sw.warmup, sw.iters));
    return best;
}

// Runs on the pair's two ranks: times every op and size into `seconds` (op-major order), and
// checks that every byte crossed the class timed.
void time_pair(Backend& backend, Communicator& world, const std::vector<int>& pair,
               const std::string& cls, const SweepSpec& sw, std::vector<double>& seconds) {
    MPI_Comm sub = MPI_COMM_NULL;
    const bool member = std::count(pair.begin(), pair.end(), world.rank()) > 0;
    check_mpi(MPI_Comm_split(world.mpi_comm(), member ? 0 : MPI_UNDEFINED, world.rank(), &sub),
              "MPI_Comm_split");
    if (!member) return;
    std::unique_ptr<Communicator> comm = backend.communicator(sub);
    MPI_Comm_free(&sub); // the communicator holds duplicates
    comm->set_node_layout(world.node_layout().restrict_to(pair));
    comm->set_name(cls);
    std::size_t i = 0;
    for (CollectiveOp op : kOps)
        for (const CollectiveSample& s : sweep_samples(op, sw, 2))
            seconds[i++] = fastest_seconds(backend, *comm, op, s.bytes, sw);
    LinkBytes sent;
    for (CollectiveOp op : kOps) sent += comm->stats().get(stats_key(op, Algo::ring)).sent_by_link;
    const bool intra = cls == "intra_node";
    check((intra ? sent.inter_node : sent.intra_node) == 0 &&
              (intra ? sent.intra_node : sent.inter_node) > 0,
          "calibrate: the " + cls + " pair's bytes crossed another link class");
}
} // namespace

std::map<std::string, std::vector<int>> link_pairs(const NodeLayout& layout) {
    std::map<std::string, std::vector<int>> pairs;
    for (int node = 0; node < layout.nodes(); ++node) {
        const std::vector<int> m = layout.members(node);
        if (m.size() >= 2) {
            pairs["intra_node"] = {m[0], m[1]};
            break;
        }
    }
    if (layout.nodes() >= 2) pairs["inter_node"] = {layout.members(0)[0], layout.members(1)[0]};
    return pairs;
}

std::map<std::string, LinkProfile> measure_links(Backend& backend, Communicator& world,
                                                 const SweepSpec& sw) {
    std::map<std::string, LinkProfile> links;
    for (const auto& [cls, pair] : link_pairs(world.node_layout())) {
        std::vector<double> seconds(std::size(kOps) * sw.sizes.size());
        time_pair(backend, world, pair, cls, sw, seconds);
        check_mpi(
            MPI_Bcast(seconds.data(), int(seconds.size()), MPI_DOUBLE, pair[0], world.mpi_comm()),
            "MPI_Bcast");
        LinkProfile& link = links[cls];
        link.ranks = pair;
        std::size_t i = 0;
        for (CollectiveOp op : kOps) {
            CollectiveFit& f = link.ops[op_name(op)];
            f.samples = sweep_samples(op, sw, 2);
            std::vector<double> x, t;
            for (CollectiveSample& s : f.samples) {
                s.seconds = seconds[i++];
                x.push_back(s.step_bytes);
                t.push_back(s.seconds / s.steps);
            }
            f.fit = fit_alpha_beta(x, t);
            // No per-byte cost is no bandwidth a profile can hold (its loader refuses beta 0):
            // every rank has the same samples (broadcast), so every rank refuses alike.
            if (!(f.fit.beta_s_per_byte > 0))
                throw UsageError(fmt::format(
                    "calibrate: the {} {} times did not grow with the message size between -b {} "
                    "and -e {} B (the sweep was disturbed, or its sizes are all latency): run it "
                    "again, or raise -e",
                    cls, op_name(op), sw.sizes.front(), sw.sizes.back()));
        }
    }
    return links;
}

} // namespace shardlab
