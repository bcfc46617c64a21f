// The handler, and the words it prints: prepared before any signal (a handler may only write),
// and true to what will happen — which depends on who sent the signal.
#include "launch/stop_request.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

namespace shardlab {

namespace {
volatile std::sig_atomic_t g_requested = 0; // the signal number; written only by the handler
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGUSR1, SIGHUP, SIGPIPE};
constexpr int kNumSignals = int(sizeof kSignals / sizeof kSignals[0]);
struct sigaction g_previous[kNumSignals];
// What the handler needs, set by the constructor: the Open MPI launcher that started this rank
// (0: none), /dev/null for an output that went away, and the two messages.
pid_t g_launcher = 0;
int g_devnull = -1;
char g_will_save[512];
char g_launcher_kills[1024];

// Open MPI's mpirun (or its daemon, orted, on other nodes) is this rank's parent. On Ctrl-C or
// SIGTERM it does not forward the signal: it sends SIGCONT, then SIGTERM after
// odls_base_sigkill_timeout seconds (default 1), then SIGKILL after as many again
// (orte/mca/odls/base/odls_base_default_fns.c, kill_local_procs). A SIGTERM from it therefore
// means "you die in T seconds", too soon to promise a checkpoint of any size.
pid_t open_mpi_launcher() {
    const pid_t parent = ::getppid();
    std::ifstream in("/proc/" + std::to_string(parent) + "/comm");
    std::string name;
    std::getline(in, name);
    for (const char* launcher : {"mpirun", "mpiexec", "orterun", "orted", "prterun", "prted"})
        if (name == launcher) return parent;
    return 0;
}

void prepare_messages() {
    std::snprintf(g_will_save, sizeof g_will_save,
                  "shardlab: stop requested: a checkpoint will be saved at the end of this step "
                  "(send it again to abort at once)\n");
    const char* timeout = std::getenv("OMPI_MCA_odls_base_sigkill_timeout");
    const bool via_script = std::getenv("SHARDLAB_LAUNCHER") != nullptr;
    std::snprintf(
        g_launcher_kills, sizeof g_launcher_kills,
        "shardlab: SIGTERM from mpirun: Open MPI ends the job and kills this rank %s s from now "
        "(SIGKILL; mpirun does this on Ctrl-C or SIGTERM, or when another rank failed). A save "
        "of this step is tried, but no checkpoint is promised: a save cut short never replaces "
        "the last complete checkpoint, which stays as it was. %s\n",
        timeout && *timeout ? timeout : "about 1",
        via_script ? "mpirun itself was signalled, not launch/mpirun_local.sh: to stop with a "
                     "checkpoint, signal the script (Ctrl-C, kill -TERM) or send SIGUSR1 to "
                     "mpirun"
                   : "To stop with a checkpoint next time: start the run with "
                     "launch/mpirun_local.sh (Ctrl-C or SIGTERM to it then saves one), or send "
                     "SIGUSR1 to mpirun (kill -USR1 <mpirun pid>)");
}

void say(const char* text) {
    (void)!::write(STDERR_FILENO, text, std::strlen(text));
}

// Standard output or error whose reader went away (a closed pipe: `| tee` ended by the same
// Ctrl-C, `| head`) or whose terminal hung up: pointed at /dev/null, so that the run's next lines
// neither raise SIGPIPE again nor fail, and the checkpoint the stop promises is still saved.
// poll(2) and dup2(2) are async-signal-safe; a pipe without readers polls POLLERR, a hung-up
// terminal POLLHUP. Returns whether one of them was lost.
bool silence_lost_outputs() {
    bool lost = false;
    for (const int fd : {STDOUT_FILENO, STDERR_FILENO}) {
        struct pollfd p {
            fd, 0, 0
        };
        if (g_devnull >= 0 && ::poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP)))
            lost = ::dup2(g_devnull, fd) >= 0 || lost;
    }
    return lost;
}

// Async-signal-safe: an atomic store, strlen, poll, dup2 and write(2). A second request is the
// user insisting. SIGPIPE is no one insisting: it asks for a stop only when it lost this
// process's output and nothing has asked yet; from any other pipe or socket (MPI's, say) it is
// ignored, as SIG_IGN would, and that write fails with EPIPE.
void on_signal(int signo, siginfo_t* info, void*) {
    if (signo == SIGPIPE) {
        if (silence_lost_outputs() && g_requested == 0) g_requested = signo;
        return;
    }
    if (signo == SIGHUP) silence_lost_outputs();
    if (g_requested != 0) {
        say("shardlab: second stop request: aborting without a checkpoint\n");
        std::signal(signo, SIG_DFL);
        std::raise(signo);
        return;
    }
    g_requested = signo;
    const bool from_launcher = g_launcher != 0 && info && info->si_pid == g_launcher &&
                               (signo == SIGTERM || signo == SIGINT);
    say(from_launcher ? g_launcher_kills : g_will_save);
}
} // namespace

StopRequest::StopRequest() {
    g_requested = 0;
    g_launcher = open_mpi_launcher();
    if (g_devnull < 0) g_devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    prepare_messages();
    struct sigaction sa {};
    sa.sa_sigaction = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_SIGINFO; // MPI and file writes carry on around the handler
    for (int i = 0; i < kNumSignals; ++i) sigaction(kSignals[i], &sa, &g_previous[i]);
}

StopRequest::~StopRequest() {
    for (int i = 0; i < kNumSignals; ++i) sigaction(kSignals[i], &g_previous[i], nullptr);
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
    case SIGHUP:
        return "SIGHUP (its terminal closed)";
    case SIGPIPE:
        return "SIGPIPE (its output was closed)";
    }
    return "a signal";
}

} // namespace shardlab
