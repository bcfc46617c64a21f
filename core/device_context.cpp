// The device context's lifetime rules, and the CPU one.
#include "core/device_context.h"

#include "core/cpu_stream.h"

#include <exception>

namespace shardlab {

DeviceContext::DeviceContext(Device device, std::unique_ptr<Stream> compute,
                             std::unique_ptr<Stream> comm, std::unique_ptr<Stream> copy)
    : device_(device), tracker_(device), compute_(std::move(compute)), comm_(std::move(comm)),
      copy_(std::move(copy)) {}

DeviceContext::~DeviceContext() {
    if (std::uncaught_exceptions() == 0) return; // the streams' destructors drain them
    bool clean = true;
    for (Stream* s : {compute_.get(), comm_.get(), copy_.get()}) clean = s->abandon(1.0) && clean;
    if (!clean) {
        tracker_.allocator(Arena::device).leak_on_destroy();
        tracker_.allocator(Arena::host).leak_on_destroy();
    }
}

void DeviceContext::synchronize() {
    compute_->synchronize();
    comm_->synchronize();
    copy_->synchronize();
}

std::unique_ptr<DeviceContext>
make_cpu_context(const std::function<void(const std::string&)>& thread_init) {
    auto group = std::make_shared<StreamGroupState>();
    auto make = [&](const std::string& name) {
        std::function<void()> init;
        if (thread_init) init = [thread_init, name] { thread_init(name); };
        return std::make_unique<CpuStream>(name, group, init);
    };
    return std::make_unique<DeviceContext>(Device::cpu(), make("compute"), make("comm"),
                                           make("copy"));
}

} // namespace shardlab
