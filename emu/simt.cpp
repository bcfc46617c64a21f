// The grid scheduler: blocks over a pool of OS threads, one fiber per CUDA thread inside a block,
// in rounds (in the order SHARDLAB_EMU_SCHEDULE picks) until every fiber waits; then barriers and
// warp rendezvous are released or, when none can be, the fault is reported.
#include "emu/simt.h"

#include "emu/fiber_sanitizers.h"
#include "emu/schedule.h"

#include <boost/container/small_vector.hpp>
#include <boost/context/fiber.hpp>
#include <boost/context/pooled_fixedsize_stack.hpp>

#include <algorithm>
#include <bit>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

namespace shardlab::emu {

namespace ctx = boost::context;

namespace {

enum class State { ready, at_barrier, at_warp, done };

struct Fiber {
    ThreadCtx id;
    State state = State::ready;
    ctx::fiber self;  // resumes this CUDA thread
    ctx::fiber sched; // resumes the block's scheduler
    std::source_location where;
    unsigned mask = 0;             // at_warp: the lanes that meet
    WarpCompute compute = nullptr; // at_warp in warp_collective: what forms the lanes' results
    std::uint64_t target = 0;      // at_warp: the rendezvous count every lane must reach
    // Warp operations done so far, counted per mask: the k-th operation with a mask meets the k-th
    // of every other lane in it, so lanes outside a partial mask never stall it (as on Volta+).
    // Kernels use one or two masks: inline, no allocation per CUDA thread.
    boost::container::small_vector<std::pair<unsigned, std::uint64_t>, 4> warp_counts;
    bool started = false; // has run: a fiber never resumed unwinds without running any of ours
    std::uint64_t barriers = 0; // barriers passed: which of the block's two barrier objects is next
    std::exception_ptr error;
    sanitizers::FiberMarks marks;
};

// A warp's collective operations: each lane's deposit, its result, and whether the result is
// there (set for the group by the lane that computes, cleared by each lane as it takes its own).
struct Warp {
    WarpWords in = {};
    WarpWords out = {};
    bool done[32] = {};
    char sync[2] = {};         // the race detector's rendezvous objects, alternating
    char result_sync[32] = {}; // its objects for ldmatrix's reads (WarpOrder::reads), by the
                               // group's lowest lane
};

// What the running fiber's calls reach: its block and itself.
struct Block {
    const char* kernel = "";
    std::vector<Fiber> fibers;
    std::vector<Warp> warps;
    std::vector<char>* dynamic_shared = nullptr;
    Schedule::Block schedule;
    sanitizers::SchedulerMarks marks;
    std::vector<void*> tsan_fibers;        // one per thread slot, kept for every later block
    std::vector<unsigned> waiting, exited; // release()'s lists, their storage kept across blocks
    // The race detector's objects: the block's start (everything before it happens before every
    // thread), and barriers in alternation (a thread may release the next barrier's before a
    // slower one has acquired the last one's, which must not order them).
    char start_sync = 0;
    char barrier_sync[2] = {};
    ~Block() {
        for (void* f : tsan_fibers) sanitizers::destroy_tsan_fiber(f);
    }
};
thread_local Block* current_block = nullptr;
thread_local Fiber* current_fiber = nullptr;

std::uint64_t warp_count(const Fiber& f, unsigned mask) {
    for (const auto& [m, n] : f.warp_counts)
        if (m == mask) return n;
    return 0;
}

std::uint64_t next_warp_count(Fiber& f, unsigned mask) {
    for (auto& [m, n] : f.warp_counts)
        if (m == mask) return ++n;
    f.warp_counts.emplace_back(mask, 1);
    return 1;
}

Fiber& me() {
    if (!current_fiber)
        throw KernelError("a CUDA device function (__syncthreads, a shuffle, threadIdx, ...) was "
                          "called outside a kernel");
    return *current_fiber;
}

void yield() {
    Fiber& f = me();
    Block& b = *current_block;
    sanitizers::to_scheduler(b.marks, f.marks, false);
    try {
        f.sched = std::move(f.sched).resume();
    } catch (const ctx::detail::forced_unwind&) { // discard_unfinished: back here to unwind
        sanitizers::back_in_fiber(b.marks, f.marks);
        throw;
    }
    sanitizers::back_in_fiber(b.marks, f.marks);
}

// The fiber stacks' pool, telling each fiber which stack it got (the sanitizers need it).
struct RecordedStack {
    ctx::pooled_fixedsize_stack* pool;
    sanitizers::FiberMarks* marks;
    ctx::stack_context allocate() {
        ctx::stack_context s = pool->allocate();
        marks->stack_size = s.size;
        marks->stack_bottom = static_cast<char*>(s.sp) - s.size;
        return s;
    }
    void deallocate(ctx::stack_context& s) {
        sanitizers::stack_returned(static_cast<char*>(s.sp) - s.size, s.size);
        pool->deallocate(s);
    }
};

std::string site(const std::source_location& w) {
    const std::string file = w.file_name();
    return file.substr(file.find_last_of('/') + 1) + ":" + std::to_string(w.line());
}

std::string ids(const std::vector<unsigned>& threads) {
    std::ostringstream s;
    for (std::size_t i = 0; i < threads.size(); ++i) {
        std::size_t j = i;
        while (j + 1 < threads.size() && threads[j + 1] == threads[j] + 1) ++j;
        s << (i ? "," : "") << threads[i];
        if (j > i) s << ".." << threads[j];
        i = j;
    }
    return s.str();
}

std::string where_block(const Block& b, uint3 block_idx) {
    std::ostringstream s;
    s << "kernel " << b.kernel << ", block (" << block_idx.x << "," << block_idx.y << ","
      << block_idx.z << ")";
    return s.str();
}
std::string where_block(const Block& b, const Fiber& f) {
    return where_block(b, f.id.block_idx);
}

// --- one block ------------------------------------------------------------------------------

bool lanes_met(const Block& b, const Fiber& f, std::string* fault) {
    const unsigned warp_base = f.id.linear / 32 * 32;
    for (unsigned l = 0; l < 32; ++l) {
        if (!(f.mask >> l & 1u)) continue;
        const unsigned t = warp_base + l;
        if (t < b.fibers.size() && warp_count(b.fibers[t], f.mask) >= f.target) continue;
        if (t >= b.fibers.size() || b.fibers[t].state == State::done) {
            *fault = "lane " + std::to_string(l) + " of the mask 0x" +
                     [&] {
                         std::ostringstream h;
                         h << std::hex << f.mask;
                         return h.str();
                     }() +
                     (t >= b.fibers.size() ? " does not exist" : " exited") + " while thread " +
                     std::to_string(f.id.linear) + " waits in a warp operation at " + site(f.where);
            return false;
        }
        return false; // lane t has not arrived yet
    }
    return true;
}

// Releases what can be released; returns false when nothing can run and not all are done.
bool release(Block& b) {
    bool any_ready = false;
    std::vector<unsigned>& waiting = b.waiting;
    std::vector<unsigned>& exited = b.exited;
    waiting.clear();
    exited.clear();
    std::string fault;
    // The lanes of one warp that wait in the same operation (mask and count) share its answer:
    // asked once per warp, not once per lane (32x fewer checks of a full-warp shuffle).
    struct Asked {
        unsigned warp = ~0u, mask = 0;
        std::uint64_t target = 0;
        bool met = false;
    } asked;
    for (Fiber& f : b.fibers) {
        if (f.state == State::at_warp) {
            const unsigned warp = f.id.linear / 32;
            if (warp != asked.warp || f.mask != asked.mask || f.target != asked.target) {
                asked = {warp, f.mask, f.target, lanes_met(b, f, &fault)};
                if (!fault.empty()) throw KernelError(where_block(b, f) + ": " + fault);
            }
            if (asked.met) f.state = State::ready;
        }
        any_ready = any_ready || f.state == State::ready;
    }
    if (any_ready) return true;
    for (Fiber& f : b.fibers) {
        if (f.state == State::at_barrier) waiting.push_back(f.id.linear);
        if (f.state == State::done) exited.push_back(f.id.linear);
    }
    if (exited.size() == b.fibers.size()) return false;
    const Fiber& first = b.fibers[waiting.empty() ? 0 : waiting.front()];
    if (waiting.size() + exited.size() == b.fibers.size()) {
        if (!exited.empty())
            throw KernelError(where_block(b, first) + ": threads " + ids(exited) +
                              " exited while threads " + ids(waiting) + " wait at __syncthreads (" +
                              site(first.where) + "): a barrier every thread must reach");
        for (unsigned t : waiting) {
            const Fiber& f = b.fibers[t];
            if (f.where.line() != first.where.line() ||
                std::strcmp(f.where.file_name(), first.where.file_name()) != 0 ||
                f.where.column() != first.where.column()) {
                std::vector<unsigned> here, there;
                for (unsigned u : waiting)
                    (b.fibers[u].where.line() == first.where.line() ? here : there).push_back(u);
                throw KernelError(where_block(b, first) + ": divergent barrier: threads " +
                                  ids(here) + " wait at " + site(first.where) + ", threads " +
                                  ids(there) + " at " + site(f.where));
            }
        }
        for (unsigned t : waiting) b.fibers[t].state = State::ready;
        return true;
    }
    // Some wait in warp operations that cannot complete, others at a barrier: nothing can move.
    std::ostringstream s;
    s << where_block(b, first) << ": deadlock:";
    for (const Fiber& f : b.fibers)
        if (f.state == State::at_warp)
            s << " thread " << f.id.linear << " waits in a warp operation at " << site(f.where)
              << ";";
    if (!waiting.empty())
        s << " threads " << ids(waiting) << " wait at __syncthreads (" << site(first.where) << ")";
    throw KernelError(s.str());
}

// Destroys the fibers a fault left suspended (unwinding their stacks), switching to each as the
// sanitizers must see it.
void discard_unfinished(Block& b) {
    for (Fiber& f : b.fibers) {
        if (f.state == State::done || !f.self) continue;
        if (!f.started) {
            f.self = ctx::fiber();
            continue;
        }
        current_fiber = &f;
        sanitizers::to_fiber(b.marks, f.marks);
        f.self = ctx::fiber();
        sanitizers::back_in_scheduler(b.marks);
        current_fiber = nullptr;
    }
}

// The race detector's name for a thread, which its reports print: "<prefix><t> (x,y,z)", the
// block's part (`prefix`) made once per block and the thread's written without streams or heap
// (built whole for every thread, it was a fifth of the embedding test's time under TSan).
void name_thread(void* tsan_fiber, const std::string& prefix, unsigned t, uint3 i) {
    char name[320];
    const std::size_t n = std::min(prefix.size(), sizeof name - 64);
    std::copy_n(prefix.data(), n, name);
    char *p = name + n, *end = name + sizeof name - 1;
    p = std::to_chars(p, end, t).ptr;
    *p++ = ' ', *p++ = '(';
    p = std::to_chars(p, end, i.x).ptr;
    *p++ = ',';
    p = std::to_chars(p, end, i.y).ptr;
    *p++ = ',';
    p = std::to_chars(p, end, i.z).ptr;
    *p++ = ')', *p = '\0';
    sanitizers::name_fiber(tsan_fiber, name);
}

void make_fibers(Block& b, uint3 block_idx, dim3 grid, dim3 dim, const std::function<void()>& body,
                 ctx::pooled_fixedsize_stack& stacks) {
    const unsigned n = dim.x * dim.y * dim.z;
    while (b.tsan_fibers.size() < n) b.tsan_fibers.push_back(sanitizers::make_tsan_fiber());
    const std::string name_prefix = // for the race detector only
        n && b.tsan_fibers[0] ? "CUDA " + where_block(b, block_idx) + ", thread " : "";
    b.fibers.clear();
    b.fibers.resize(n);
    // Only the flags need resetting (a fault can leave some set): deposits and results are written
    // before they are read. Rewriting every warp's 4 KB for each block was a range access per
    // block under ThreadSanitizer.
    b.warps.resize((n + 31) / 32);
    for (Warp& w : b.warps) std::fill(std::begin(w.done), std::end(w.done), false);
    for (unsigned t = 0; t < n; ++t) {
        Fiber& f = b.fibers[t];
        f.id.linear = t;
        f.id.thread_idx = {t % dim.x, (t / dim.x) % dim.y, t / (dim.x * dim.y)};
        f.id.block_idx = block_idx;
        f.id.block_dim = dim;
        f.id.grid_dim = grid;
        f.marks.tsan = b.tsan_fibers[t];
        if (f.marks.tsan) name_thread(f.marks.tsan, name_prefix, t, f.id.thread_idx);
        Block* block = &b;
        f.self = ctx::fiber(std::allocator_arg, RecordedStack{&stacks, &f.marks},
                            [&f, &body, block](ctx::fiber&& sched) {
                                sanitizers::fiber_started(block->marks);
                                f.started = true;
                                sanitizers::acquire(&block->start_sync);
                                f.sched = std::move(sched);
                                try {
                                    body();
                                    if (!f.id.async_copies.empty())
                                        kernel_fault(std::to_string(f.id.async_copies.size()) +
                                                     " cp.async copies never waited for "
                                                     "(cp.async.wait_group)");
                                } catch (const ctx::detail::forced_unwind&) {
                                    sanitizers::to_scheduler(block->marks, f.marks, true);
                                    throw;
                                } catch (...) {
                                    f.error = std::current_exception();
                                }
                                f.state = State::done;
                                sanitizers::to_scheduler(block->marks, f.marks, true);
                                return std::move(f.sched);
                            });
    }
}

void run_block(Block& b, const char* kernel, uint3 block_idx, dim3 grid, dim3 dim,
               const std::function<void()>& body, ctx::pooled_fixedsize_stack& stacks) {
    b.kernel = kernel;
    b.schedule.start(Schedule::process(), kernel,
                     block_idx.x + 1ull * grid.x * (block_idx.y + 1ull * grid.y * block_idx.z));
    sanitizers::enter_scheduler(b.marks);
    make_fibers(b, block_idx, grid, dim, body, stacks);
    sanitizers::release(&b.start_sync);
    current_block = &b;
    try {
        for (;;) {
            for (unsigned t : b.schedule.next_round(unsigned(b.fibers.size()))) {
                Fiber& f = b.fibers[t];
                if (f.state != State::ready) continue;
                current_fiber = &f;
                sanitizers::to_fiber(b.marks, f.marks);
                f.self = std::move(f.self).resume();
                sanitizers::back_in_scheduler(b.marks);
                current_fiber = nullptr;
                if (f.error) std::rethrow_exception(f.error);
            }
            if (!release(b)) break;
        }
    } catch (...) {
        current_fiber = nullptr;
        discard_unfinished(b);
        current_block = nullptr;
        throw;
    }
    current_block = nullptr;
}

// --- the pool -------------------------------------------------------------------------------

struct Job {
    const char* kernel;
    dim3 grid, block;
    std::size_t smem;
    const std::function<void()>* body;
    std::atomic<unsigned long long> next{0};
    unsigned long long total = 0;
    std::mutex mutex;
    std::condition_variable done_cv;
    unsigned long long done = 0;
    std::exception_ptr error;
};

// A job's reference, given up: the count shared_ptr keeps is an atomic in this uninstrumented file,
// invisible to ThreadSanitizer, so each owner releases before it lets go and the last one acquires
// before deleting (emu/fiber_sanitizers.h); without it the Job's deletion looks like a race.
struct JobRef {
    std::shared_ptr<Job> job;
    JobRef() = default;
    explicit JobRef(std::shared_ptr<Job> j) : job(std::move(j)) {}
    JobRef(const JobRef&) = delete;
    JobRef& operator=(const JobRef&) = delete;
    ~JobRef() {
        if (job) sanitizers::release(job.get());
    }
};
std::shared_ptr<Job> make_job() {
    return std::shared_ptr<Job>(new Job, [](Job* j) {
        sanitizers::acquire(j);
        delete j;
    });
}

// Runs blocks of `job` until none are left; returns when this thread has no more to take.
void work_on(Job& job) {
    thread_local ctx::pooled_fixedsize_stack stacks(64 * 1024);
    thread_local Block block;
    thread_local std::vector<char> dynamic_shared;
    for (;;) {
        const unsigned long long i = job.next.fetch_add(1);
        if (i >= job.total) return;
        const dim3 g = job.grid;
        const uint3 idx{unsigned(i % g.x), unsigned((i / g.x) % g.y), unsigned(i / (g.x * g.y))};
        try {
            bool failed = false;
            {
                std::lock_guard<std::mutex> lock(job.mutex);
                failed = job.error != nullptr;
            }
            if (!failed) {
                // A GPU's shared memory starts with what an earlier block left: all-ones bytes
                // here (NaN in every float type, -1 in every integer), so that a kernel reading
                // it before writing it fails its tests under the emulator too.
                dynamic_shared.assign(job.smem, char(0xFF));
                block.dynamic_shared = &dynamic_shared;
                run_block(block, job.kernel, idx, g, job.block, *job.body, stacks);
            }
        } catch (...) {
            std::lock_guard<std::mutex> lock(job.mutex);
            if (!job.error) job.error = std::current_exception();
        }
        std::lock_guard<std::mutex> lock(job.mutex);
        if (++job.done == job.total) job.done_cv.notify_all();
    }
}

// OS threads that help with every grid; the thread that launches also works on its own grid, so a
// grid always makes progress whatever the pool is doing.
class Pool {
  public:
    Pool() {
        const unsigned n = std::max(1u, std::thread::hardware_concurrency());
        for (unsigned i = 0; i < n; ++i) workers_.emplace_back([this] { loop(); });
    }
    ~Pool() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        cv_.notify_all();
        for (auto& w : workers_) w.join();
    }
    void post(const std::shared_ptr<Job>& job) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            jobs_.push_back(job);
        }
        cv_.notify_all();
    }

  private:
    void loop() {
        for (;;) {
            JobRef ref;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
                if (stop_) return;
                if (jobs_.front()->next.load() >= jobs_.front()->total) {
                    sanitizers::release(jobs_.front().get());
                    jobs_.pop_front(); // nothing left to take
                    continue;
                }
                ref.job = jobs_.front();
            }
            work_on(*ref.job);
        }
    }
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<std::shared_ptr<Job>> jobs_;
    std::vector<std::thread> workers_;
    bool stop_ = false;
};

Pool& pool() {
    static Pool p; // the emulated GPU's multiprocessors
    return p;
}

} // namespace

ThreadCtx& thread_ctx() {
    Fiber& f = me();
    // A random schedule also switches threads here, inside a barrier interval: kernels read their
    // ids all along, so interleavings vary beyond the order in which threads start.
    if (current_block->schedule.yield_now()) yield();
    return f.id;
}

int lane_id() {
    return int(me().id.linear % 32);
}

void* dynamic_shared() {
    me();
    return current_block->dynamic_shared->data();
}

namespace {
// SHARDLAB_EMU_DELETE_BARRIER=FILE:LINE (tests/barrier_mutants.sh) turns that __syncthreads or
// __syncwarp into nothing, as if it were deleted from the source: the race detector must then
// report the race it guarded against. Announced once on stderr, so a mutation that never ran is
// seen as such.
bool deleted_barrier(const std::source_location& where) {
    const std::string& deleted = sanitizers::made_once([] {
        const char* env = std::getenv("SHARDLAB_EMU_DELETE_BARRIER");
        return std::string(env ? env : "");
    });
    if (deleted.empty() || site(where) != deleted) return false;
    static std::once_flag announced;
    std::call_once(announced, [&] {
        std::fprintf(stderr, "emu: the barrier at %s is deleted (SHARDLAB_EMU_DELETE_BARRIER)\n",
                     deleted.c_str());
    });
    return true;
}
} // namespace

void syncthreads(std::source_location where) {
    if (deleted_barrier(where)) return;
    Fiber& f = me();
    f.state = State::at_barrier;
    f.where = where;
    void* barrier = &current_block->barrier_sync[f.barriers++ % 2];
    sanitizers::release(barrier);
    yield();
    sanitizers::acquire(barrier);
}

namespace {
// One rendezvous of the lanes in `mask`: returns once every one of them has arrived.
void meet(unsigned mask, std::source_location where, bool orders_memory) {
    Fiber& f = me();
    const unsigned lane = f.id.linear % 32;
    if (!(mask >> lane & 1u))
        throw KernelError(
            where_block(*current_block, f) + ": thread " + std::to_string(f.id.linear) +
            " calls a warp operation whose mask leaves out its own lane (" + site(where) + ")");
    f.state = State::at_warp;
    f.mask = mask;
    f.where = where;
    f.target = next_warp_count(f, mask);
    void* rendezvous = &current_block->warps[f.id.linear / 32].sync[f.target % 2];
    if (orders_memory) sanitizers::release(rendezvous);
    yield();
    if (orders_memory) sanitizers::acquire(rendezvous);
}
} // namespace

namespace {
// The first lane of a met group to run computes every lane's result; it also checks that the
// group's lanes are in the same operation (a shuffle meeting a vote would exchange nonsense).
// __syncwarp is an operation with nothing to compute (nullptr).
void complete(Warp& w, const Fiber& f, unsigned mask) {
    const unsigned base = f.id.linear / 32 * 32;
    for (unsigned l = 0; l < 32; ++l) {
        if (!(mask >> l & 1u)) continue;
        const Fiber& other = current_block->fibers[base + l];
        if (other.compute != f.compute)
            throw KernelError(
                where_block(*current_block, f) + ": threads " + std::to_string(f.id.linear) +
                " and " + std::to_string(other.id.linear) + " meet in different warp operations (" +
                site(f.where) + ", " + site(other.where) + ")");
    }
    if (f.compute) f.compute(mask, w.in, w.out);
    for (unsigned l = 0; l < 32; ++l)
        if (mask >> l & 1u) w.done[l] = true;
}

// A shuffle's deposit: the value (two words) and the lane it reads.
void exchange(unsigned mask, const WarpWords& in, WarpWords& out) {
    for (unsigned l = 0; l < 32; ++l) {
        if (!(mask >> l & 1u)) continue;
        const std::uint32_t src = in[l][2];
        out[l][0] = in[src][0];
        out[l][1] = in[src][1];
    }
}

void ballot(unsigned mask, const WarpWords& in, WarpWords& out) {
    std::uint32_t bits = 0;
    for (unsigned l = 0; l < 32; ++l)
        if ((mask >> l & 1u) && in[l][0]) bits |= 1u << l;
    for (unsigned l = 0; l < 32; ++l)
        if (mask >> l & 1u) out[l][0] = bits;
}
} // namespace

void warp_collective(unsigned mask, const std::uint32_t* in, int in_words, std::uint32_t* out,
                     int out_words, WarpCompute compute, std::source_location where,
                     WarpOrder order) {
    Fiber& f = me();
    if (in_words < 0 || in_words > kCollectiveWords || out_words < 0 ||
        out_words > kCollectiveWords)
        throw KernelError(where_block(*current_block, f) + ": a warp operation of " +
                          std::to_string(in_words) + " words in, " + std::to_string(out_words) +
                          " out (at most " + std::to_string(kCollectiveWords) + " each, " +
                          site(where) + ")");
    Warp& w = current_block->warps[f.id.linear / 32];
    const unsigned lane = f.id.linear % 32;
    if (in_words) std::memcpy(w.in[lane], in, sizeof(std::uint32_t) * std::size_t(in_words));
    f.compute = compute;
    meet(mask, where, order == WarpOrder::lanes); // every lane of the mask has deposited
    // What a compute read of the kernel's memory for the warp (ldmatrix's shared-memory rows) must
    // happen before every lane goes on, as the instruction's end orders it on a GPU. One object
    // per group (by its lowest lane), so disjoint groups stay unordered.
    void* result = &w.result_sync[std::countr_zero(mask)];
    if (!w.done[lane]) {
        complete(w, f, mask);
        if (order == WarpOrder::reads) sanitizers::release(result);
    }
    if (order == WarpOrder::reads) sanitizers::acquire(result);
    w.done[lane] = false;
    if (out_words) std::memcpy(out, w.out[lane], sizeof(std::uint32_t) * std::size_t(out_words));
}

void syncwarp(unsigned mask, std::source_location where) {
    if (deleted_barrier(where)) return;
    warp_collective(mask, nullptr, 0, nullptr, 0, nullptr, where, WarpOrder::lanes);
}

std::uint64_t warp_exchange(unsigned mask, std::uint64_t value, int src,
                            std::source_location where) {
    if (src < 0 || src > 31 || !(mask >> src & 1u)) {
        const Fiber& f = me();
        throw KernelError(where_block(*current_block, f) + ": thread " +
                          std::to_string(f.id.linear) + " reads lane " + std::to_string(src) +
                          ", which is not in the shuffle's mask (" + site(where) + ")");
    }
    const std::uint32_t in[3] = {std::uint32_t(value), std::uint32_t(value >> 32),
                                 std::uint32_t(src)};
    std::uint32_t got[2];
    warp_collective(mask, in, 3, got, 2, exchange, where, WarpOrder::nothing);
    return got[0] | std::uint64_t(got[1]) << 32;
}

unsigned warp_ballot(unsigned mask, bool predicate, std::source_location where) {
    const std::uint32_t in = predicate;
    std::uint32_t bits;
    warp_collective(mask, &in, 1, &bits, 1, ballot, where, WarpOrder::nothing);
    return bits;
}

void check_aligned(const void* p, std::size_t alignment, const char* what) {
    if (reinterpret_cast<std::uintptr_t>(p) % alignment == 0) return;
    std::ostringstream s;
    s << "misaligned address: " << what << " at " << p << " needs " << alignment
      << "-byte alignment";
    if (current_fiber) s << " (" << where_block(*current_block, *current_fiber) << ")";
    throw KernelError(s.str());
}

void kernel_fault(const std::string& what) {
    if (!current_fiber) throw KernelError(what);
    throw KernelError(where_block(*current_block, *current_fiber) + ", thread " +
                      std::to_string(current_fiber->id.linear) + ": " + what);
}

void run_grid(const char* kernel, dim3 grid, dim3 block, std::size_t dynamic_shared_bytes,
              const std::function<void()>& body) {
    Schedule::process(); // a malformed SHARDLAB_EMU_SCHEDULE fails here, before any block runs
    const JobRef ref(make_job());
    Job* job = ref.job.get();
    job->kernel = kernel;
    job->grid = grid;
    job->block = block;
    job->smem = dynamic_shared_bytes;
    job->body = &body;
    job->total = 1ull * grid.x * grid.y * grid.z;
    if (job->total == 0) return;
    pool().post(ref.job);
    work_on(*job);
    std::unique_lock<std::mutex> lock(job->mutex);
    job->done_cv.wait(lock, [&] { return job->done == job->total; });
    if (!job->error) return;
    try {
        std::rethrow_exception(job->error);
    } catch (const KernelError& e) {
        // The interleaving matters to a fault: say which schedule reproduces it.
        throw KernelError(std::string(e.what()) +
                          " [SHARDLAB_EMU_SCHEDULE=" + Schedule::process().text() + "]");
    }
}

} // namespace shardlab::emu
