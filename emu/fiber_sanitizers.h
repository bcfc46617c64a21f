// What the sanitizers must be told about the emulator's fiber switches (test infrastructure; only
// emu/simt.cpp includes it). Without it AddressSanitizer takes a fiber's stack for a stack overflow
// of the OS thread, and ThreadSanitizer sees one thread where a block runs hundreds.
//
// ThreadSanitizer (SHARDLAB_EMU_TSAN: simt.cpp itself is compiled without instrumentation, so the
// scheduler's bookkeeping is never reported): every CUDA thread is a TSan fiber, and switching to
// one creates no happens-before ("no sync"), so two threads of a block are ordered only by what
// orders them on a GPU: a barrier or a __syncwarp, each a release by every thread that arrives
// and an acquire by every thread that leaves (shuffles, votes, mma.sync and WMMA calls order no
// memory, as in CUDA; ldmatrix's reads end before its lanes go on: emu::WarpOrder). A race between
// them is reported with the fiber's name: kernel, block and thread. A thread's last switch back to
// the scheduler (as it exits) synchronises, so everything a block did happens before the next block
// on that OS thread (which reuses its stacks and `__shared__` memory) and before the launch
// returns; its switches at barriers and warp operations do not (the scheduler's code is not
// instrumented, so nothing there needs them, and each would cost a vector-clock merge the size of
// every fiber ever made).
//
// AddressSanitizer (__SANITIZE_ADDRESS__): each switch names the stack it goes to
// (__sanitizer_start_switch_fiber / __sanitizer_finish_switch_fiber).
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(SHARDLAB_EMU_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace shardlab::emu::sanitizers {

// One CUDA thread's side of the switches.
struct FiberMarks {
    const void* stack_bottom = nullptr; // its stack (lowest address) and size
    std::size_t stack_size = 0;
    void* fake_stack = nullptr; // AddressSanitizer's, while it is switched out
    void* tsan = nullptr;       // its ThreadSanitizer fiber
};

// The scheduler's side (one per OS thread): its stack as the fibers learn it, its TSan fiber.
struct SchedulerMarks {
    const void* stack_bottom = nullptr;
    std::size_t stack_size = 0;
    void* fake_stack = nullptr;
    void* tsan = nullptr;
};

inline void enter_scheduler([[maybe_unused]] SchedulerMarks& s) {
#if defined(SHARDLAB_EMU_TSAN)
    s.tsan = __tsan_get_current_fiber();
#endif
}

// A ThreadSanitizer fiber for a CUDA thread; made once per slot and OS thread, named per block.
inline void* make_tsan_fiber() {
#if defined(SHARDLAB_EMU_TSAN)
    return __tsan_create_fiber(0);
#else
    return nullptr;
#endif
}
inline void destroy_tsan_fiber([[maybe_unused]] void* fiber) {
#if defined(SHARDLAB_EMU_TSAN)
    __tsan_destroy_fiber(fiber);
#endif
}
inline void name_fiber([[maybe_unused]] void* fiber, [[maybe_unused]] const char* name) {
#if defined(SHARDLAB_EMU_TSAN)
    __tsan_set_fiber_name(fiber, name);
#endif
}

// Scheduler -> CUDA thread, and back in the scheduler afterwards.
inline void to_fiber([[maybe_unused]] SchedulerMarks& s, [[maybe_unused]] const FiberMarks& f) {
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_start_switch_fiber(&s.fake_stack, f.stack_bottom, f.stack_size);
#endif
#if defined(SHARDLAB_EMU_TSAN)
    __tsan_switch_to_fiber(f.tsan, __tsan_switch_to_fiber_no_sync);
#endif
}
inline void back_in_scheduler([[maybe_unused]] SchedulerMarks& s) {
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_finish_switch_fiber(s.fake_stack, nullptr, nullptr);
#endif
}

// A CUDA thread's first instructions: learn the scheduler's stack.
inline void fiber_started([[maybe_unused]] SchedulerMarks& s) {
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_finish_switch_fiber(nullptr, &s.stack_bottom, &s.stack_size);
#endif
}
// CUDA thread -> scheduler (`exiting`: for good, so its fake stack goes), and back in the thread.
inline void to_scheduler([[maybe_unused]] SchedulerMarks& s, [[maybe_unused]] FiberMarks& f,
                         [[maybe_unused]] bool exiting) {
#if defined(SHARDLAB_EMU_TSAN)
    __tsan_switch_to_fiber(s.tsan, exiting ? 0 : __tsan_switch_to_fiber_no_sync);
#endif
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_start_switch_fiber(exiting ? nullptr : &f.fake_stack, s.stack_bottom, s.stack_size);
#endif
}
inline void back_in_fiber([[maybe_unused]] SchedulerMarks& s, [[maybe_unused]] FiberMarks& f) {
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_finish_switch_fiber(f.fake_stack, &s.stack_bottom, &s.stack_size);
#endif
}

// Happens-before through a synchronisation object (a barrier's, a warp's): every thread that
// arrives releases, every thread that leaves acquires.
inline void release([[maybe_unused]] void* object) {
#if defined(SHARDLAB_EMU_TSAN)
    __tsan_release(object);
#endif
}
inline void acquire([[maybe_unused]] void* object) {
#if defined(SHARDLAB_EMU_TSAN)
    __tsan_acquire(object);
#endif
}

// A process-wide setting made once (a function-local static of `init`'s type) and read by any
// thread. The guard's fast path sits in this uninstrumented code, so its ordering is invisible to
// ThreadSanitizer; the first reader publishes the value and every reader acquires it.
template <typename Init>
const auto& made_once(Init init) {
    static const auto value = init();
    static const bool published =
        (release(const_cast<void*>(static_cast<const void*>(&value))), true);
    (void)published;
    acquire(const_cast<void*>(static_cast<const void*>(&value)));
    return value;
}

// A stack goes back to the pool: what its last fiber left poisoned must not trip the next one.
inline void stack_returned([[maybe_unused]] void* bottom, [[maybe_unused]] std::size_t size) {
#if defined(__SANITIZE_ADDRESS__)
    ASAN_UNPOISON_MEMORY_REGION(bottom, size);
#endif
}

} // namespace shardlab::emu::sanitizers
