// The handler and the agreement.
#include "launch/stop_request.h"

#include <csignal>
#include <cstring>

#include <unistd.h>

namespace shardlab {

namespace {
volatile std::sig_atomic_t g_requested = 0; // the signal number; written only by the handler
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGUSR1};
struct sigaction g_previous[3];

// Async-signal-safe: an atomic store and write(2). A second request is the user insisting.
void on_signal(int signo) {
    if (g_requested != 0) {
        const char msg[] = "shardlab: second stop request: aborting without a checkpoint\n";
        (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
        std::signal(signo, SIG_DFL);
        std::raise(signo);
        return;
    }
    g_requested = signo;
    const char msg[] = "shardlab: stop requested: a checkpoint will be saved at the end of this "
                       "step (send it again to abort at once)\n";
    (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
}
} // namespace

StopRequest::StopRequest() {
    g_requested = 0;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; // MPI and file writes carry on around the handler
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &sa, &g_previous[i]);
}

StopRequest::~StopRequest() {
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &g_previous[i], nullptr);
}

int StopRequest::requested() const {
    return g_requested;
}

const char* signal_name(int signo) {
    switch (signo) {
    case SIGINT:
        return "SIGINT (Ctrl-C)";
    case SIGTERM:
        return "SIGTERM";
    case SIGUSR1:
        return "SIGUSR1";
    }
    return "a signal";
}

} // namespace shardlab
