// Waiting with a deadline, and the investigation when it passes.
#include "comm/mpi_watchdog.h"

#include "comm/mpi_error.h"
#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <sstream>
#include <thread>

namespace shardlab {

namespace {
using Clock = std::chrono::steady_clock;
constexpr int kReportTag = 1;
// A gap this long between two spins of a wait (one yield or a 200 us sleep apart, or milliseconds
// on a crowded machine) means this process did not run: stopped (SIGSTOP, a debugger) and
// continued.
constexpr double kPausedSeconds = 2;
// How long a wait yields between its tests before it sleeps between them instead (200 us).
constexpr double kYieldSeconds = 0.5;

double since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

// How long a rank collects the others' answers: live ranks answer within milliseconds of the
// first report, so this only bounds how long we wait for ranks that cannot answer.
double grace_seconds(double timeout) {
    return std::clamp(timeout / 2, 1.0, 10.0);
}

std::string encode(const CollectiveId& id, double waited, bool late) {
    return fmt::format("{}\t{}\t{:.3f}\t{}\t{}\t{}", id.seq, id.bytes, waited, late ? 1 : 0, id.op,
                       id.what);
}

struct RankWait {
    CollectiveId id;
    double waited = 0;
    bool late = false; // it arrived, or ran again, after the others had given up
};

RankWait decode(const std::string& text) {
    std::istringstream in(text);
    RankWait w;
    std::string field;
    std::getline(in, field, '\t');
    w.id.seq = std::stoull(field);
    std::getline(in, field, '\t');
    w.id.bytes = std::stoull(field);
    std::getline(in, field, '\t');
    w.waited = std::stod(field);
    std::getline(in, field, '\t');
    w.late = field == "1";
    std::getline(in, w.id.op, '\t');
    std::getline(in, w.id.what);
    return w;
}

bool same_call(const CollectiveId& a, const CollectiveId& b) {
    return a.seq == b.seq && a.op == b.op && a.bytes == b.bytes;
}

// When another rank's report was already waiting as this rank arrived (or as it ran again after a
// pause), the others gave up while this rank was not there: it was the one missing — stopped
// (SIGSTOP, a debugger) or too slow (swapping, a slow disk) — and is only now reading their
// reports. The network is not to blame then, whatever the answers look like.
std::string late_arrival(const std::vector<std::optional<RankWait>>& seen, int me,
                         const RankNames& names) {
    int longest = me;
    for (std::size_t r = 0; r < seen.size(); ++r)
        if (seen[r] && seen[r]->waited > seen[std::size_t(longest)]->waited) longest = int(r);
    return fmt::format("the other ranks gave up on this collective while this rank was not there "
                       "({} waited {:.1f} s): this rank was stopped or too slow (SIGSTOP, "
                       "a debugger, swapping, a slow disk), and the others ended the job",
                       names.one(longest), seen[std::size_t(longest)]->waited);
}

// The verdict from what every rank said (nullopt: no answer): a schedule mismatch when two ranks
// wait in different collectives under one sequence number; otherwise the ranks that did not
// answer have not arrived (sequence numbers may differ by one then: a ring lets a rank finish a
// collective its successor is still in).
std::string verdict(const std::vector<std::optional<RankWait>>& seen, int me, bool late,
                    const RankNames& names) {
    std::vector<int> missing;
    bool conflict = false, out_of_step = false;
    for (std::size_t r = 0; r < seen.size(); ++r) {
        if (!seen[r]) {
            missing.push_back(int(r));
            continue;
        }
        for (std::size_t q = 0; q < r; ++q)
            if (seen[q]) {
                conflict = conflict || (seen[q]->id.seq == seen[r]->id.seq &&
                                        !same_call(seen[q]->id, seen[r]->id));
                out_of_step = out_of_step || seen[q]->id.seq != seen[r]->id.seq;
            }
    }
    if (late) return late_arrival(seen, me, names);
    std::vector<int> late_ranks; // those that answered only after being continued
    for (std::size_t r = 0; r < seen.size(); ++r)
        if (seen[r] && seen[r]->late) late_ranks.push_back(int(r));
    if (!late_ranks.empty())
        return names.list(late_ranks) + (late_ranks.size() == 1 ? " was" : " were") +
               " not there when the ranks gave up, and answered only after being continued: a "
               "stopped process (SIGSTOP, a debugger) or one too slow; look there";
    const CollectiveId& mine = seen[std::size_t(me)]->id;
    if (conflict)
        return "schedule mismatch: the ranks wait in different collectives (they took different "
               "code paths, or a collective was skipped on some rank); this is a bug in the "
               "program, not a slow rank — the table above says who is where";
    if (!missing.empty())
        return names.list(missing) + (missing.size() == 1 ? " has" : " have") +
               " not arrived: a stopped process (SIGSTOP, a debugger), a hung node or a lost "
               "link; look there";
    if (out_of_step)
        return "the ranks are out of step (different collectives, see the table): a rank skipped "
               "or added a collective, or was stopped and resumed";
    return fmt::format("every rank waits in {} and no message arrives: the network or the MPI "
                       "library is stuck",
                       describe(mine));
}

// Whether another rank investigated because its own deadline passed (not because it was asked).
bool peer_gave_up(const std::vector<std::optional<RankWait>>& seen, int me, double timeout) {
    for (std::size_t r = 0; r < seen.size(); ++r)
        if (int(r) != me && seen[r] && timeout > 0 && seen[r]->waited >= timeout) return true;
    return false;
}

std::string table(const std::vector<std::optional<RankWait>>& seen, double grace,
                  const RankNames& names) {
    std::string s;
    for (std::size_t r = 0; r < seen.size(); ++r)
        s += seen[r] ? fmt::format("  {}: waiting {:.1f} s in {}\n", names.one(int(r)),
                                   seen[r]->waited, describe(seen[r]->id))
                     : fmt::format("  {}: no answer within {:.1f} s (stopped, stuck outside "
                                   "a collective, or dead)\n",
                                   names.one(int(r)), grace);
    return s;
}
} // namespace

int collective_tag(const CollectiveId& id) {
    std::uint64_t h = 1469598103934665603ull; // FNV-1a over the fields
    auto mix = [&h](std::uint64_t v) {
        for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ull;
    };
    mix(id.seq);
    mix(id.bytes);
    for (unsigned char c : id.op) mix(c);
    return 2 + int(h % 32000); // MPI guarantees tags up to 32767; 0 and 1 are left alone
}

MPI_Comm duplicate_within(MPI_Comm comm, double timeout_s) {
    MPI_Comm dup = MPI_COMM_NULL;
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Comm_idup(comm, &dup, &request), "MPI_Comm_idup");
    const auto start = Clock::now();
    for (;;) {
        int done = 0;
        check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
        if (done) return dup;
        if (timeout_s > 0 && since(start) > timeout_s) {
            int rank = 0, size = 1;
            MPI_Comm_rank(comm, &rank);
            MPI_Comm_size(comm, &size);
            throw Error(fmt::format(
                "collective watchdog: rank {} waited {:.1f} s for the {} ranks to start together "
                "(--collective-timeout {:g} s): a rank is stopped (SIGSTOP, a debugger), stuck or "
                "dead before its first collective; ending the job",
                rank, since(start), size, timeout_s));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1)); // start-up: no hurry
    }
}

Watchdog::Watchdog(MPI_Comm comm, double timeout_s)
    : comm_(duplicate_within(comm, timeout_s)), names_(comm_), timeout_s_(timeout_s) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
}

Watchdog::~Watchdog() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    // After an investigation, sends to ranks that never answered are still pending: leave them.
    if (!finalized && report_requests_.empty()) MPI_Comm_free(&comm_);
}

bool Watchdog::peer_is_asking() {
    int flag = 0;
    check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, kReportTag, comm_, &flag, MPI_STATUS_IGNORE),
              "MPI_Iprobe");
    return flag != 0;
}

void Watchdog::wait_all(std::vector<MPI_Request>& reqs, const CollectiveId& id) {
    const auto start = Clock::now();
    auto last = start;
    paused_ = false; // this process did not run for a while (stopped and continued)
    for (unsigned spins = 0;; ++spins) {
        int done = 0;
        check_mpi(MPI_Testall(int(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE),
                  "MPI_Testall");
        if (done) return;
        const auto now = Clock::now(); // a clock read costs far less than the yield below
        paused_ = paused_ || std::chrono::duration<double>(now - last).count() > kPausedSeconds;
        last = now;
        if (size_ > 1 && spins % 256 == 0) { // a probe, not on every spin; the first on arrival
            const double waited = since(start), limit = timeout_s_;
            const bool asked = peer_is_asking();
            // Asked as this rank arrived, or after it had not run for a while: then this rank is
            // the one the others waited for.
            arrived_late_ = asked && (spins == 0 || paused_);
            if ((limit > 0 && waited > limit) || asked) investigate(id, waited);
        }
        // Yielding answers within microseconds; after a while of waiting, sleeping spares the core
        // (a rank stopped for the whole timeout had every other rank spin one).
        if (std::chrono::duration<double>(now - start).count() < kYieldSeconds)
            std::this_thread::yield();
        else
            std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
}

void Watchdog::investigate(const CollectiveId& id, double waited) {
    report_ = encode(id, waited, arrived_late_);
    report_requests_.assign(std::size_t(size_), MPI_REQUEST_NULL);
    for (int peer = 0; peer < size_; ++peer)
        if (peer != rank_)
            check_mpi(MPI_Isend(report_.data(), int(report_.size()), MPI_CHAR, peer, kReportTag,
                                comm_, &report_requests_[std::size_t(peer)]),
                      "MPI_Isend");
    std::vector<std::optional<RankWait>> seen(static_cast<std::size_t>(size_));
    seen[std::size_t(rank_)] = RankWait{id, waited, arrived_late_};
    const double grace = grace_seconds(timeout_s_);
    const auto start = Clock::now();
    auto answers = [&] {
        return std::count_if(seen.begin(), seen.end(), [](auto& w) { return bool(w); });
    };
    while (answers() < size_ && since(start) < grace) {
        MPI_Status st;
        int flag = 0, n = 0;
        check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, kReportTag, comm_, &flag, &st), "MPI_Iprobe");
        if (!flag) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            continue;
        }
        MPI_Get_count(&st, MPI_CHAR, &n);
        std::string text(std::size_t(n), '\0');
        check_mpi(
            MPI_Recv(text.data(), n, MPI_CHAR, st.MPI_SOURCE, kReportTag, comm_, MPI_STATUS_IGNORE),
            "MPI_Recv");
        seen[std::size_t(st.MPI_SOURCE)] = decode(text);
    }
    // A rank that did not run for a while may probe before its transport has delivered the
    // reports already sent to it; a peer that gave up on its own clock says the same thing.
    const bool late = arrived_late_ || (paused_ && peer_gave_up(seen, rank_, timeout_s_));
    // Every live rank says where it is and what it concludes; the lowest adds the table. The
    // others reach this point within milliseconds: let them print before one of us aborts.
    int first = 0;
    while (!seen[std::size_t(first)]) ++first;
    const std::string line = fmt::format(
        "shardlab: {}: collective watchdog: waited {:.1f} s in {}: {} (--collective-timeout "
        "{:g} s; 0 waits forever)\n",
        names_.one(rank_), waited, describe(id), verdict(seen, rank_, late, names_),
        timeout_s_.load());
    const std::string text =
        (first == rank_
             ? "shardlab: collective watchdog: where every rank is:\n" + table(seen, grace, names_)
             : std::string()) +
        line;
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    throw Error(fmt::format("collective watchdog: {} ends the job (where every rank is: above)",
                            names_.one(rank_)));
}

} // namespace shardlab
