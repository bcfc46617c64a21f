// Stream and Event: the execution model shared by both backends. A stream is an in-order queue of
// work for one device (on the CPU: a worker thread; on a GPU: a CUDA stream); an event marks one
// point of one stream, so another stream — or the host — can wait for it. Every op, collective
// and copy is enqueued on a stream and returns at once; results exist only once the stream has
// passed them. (The CUDA semantics: cudaStream_t, cudaEventRecord / cudaStreamWaitEvent.)
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace shardlab {

// One point in one stream's order. Made by Stream::record(); shared by whoever waits for it.
class Event {
  public:
    virtual ~Event() = default;
    virtual bool query() const = 0; // has the stream passed this point?
    virtual void synchronize() = 0; // the host waits until it has (rethrows the stream's error)
    // Seconds between two completed events of any streams (cudaEventElapsedTime).
    virtual double seconds_since(const Event& earlier) const = 0;
};
using EventPtr = std::shared_ptr<Event>;

class Stream {
  public:
    virtual ~Stream() = default;
    virtual const std::string& name() const = 0; // "compute", "comm", "copy"

    // Marks this point: the event completes when everything enqueued so far has run.
    virtual EventPtr record() = 0;
    // The same, for a point only waited for or queried, never timed (seconds_since): a GPU stream
    // records it without a timestamp.
    virtual EventPtr record_untimed() { return record(); }
    // Work enqueued after this call starts only once `e` has completed (cudaStreamWaitEvent).
    // `e` may come from another backend's stream (a GPU stream and a host worker): then a task
    // of this stream waits for it on the host.
    virtual void wait(const EventPtr& e) = 0;
    // The host waits for everything enqueued so far; rethrows the first error any task raised.
    virtual void synchronize() = 0;

    // Runs fn on the host in stream order (cudaLaunchHostFunc). The CPU backend's kernels,
    // transfers and collectives are such tasks; on a GPU it is for host-side steps (traces).
    virtual void enqueue(std::function<void()> fn) = 0;
    // Copies bytes between any two places, in stream order (cudaMemcpyAsync).
    virtual void memcpy(void* dst, const void* src, std::size_t bytes) = 0;
    // Copies host data to dst; the host buffer may be reused as soon as this returns.
    virtual void upload(void* dst, const void* host_src, std::size_t bytes) = 0;

    // When unwinding from an error: skips the work not yet started and stops waiting for what is
    // running after `patience_s` (it may wait for a peer that is gone), so that destroying the
    // stream never hangs. False when work may still be running: its memory must never be freed.
    virtual bool abandon(double patience_s) = 0;
};

} // namespace shardlab
