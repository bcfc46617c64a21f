// Progress lines and the terminal status line.
#include "launch/progress.h"

#include "core/timer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <unistd.h>

namespace shardlab {

namespace {
std::string duration(double s) {
    const long t = std::lround(std::max(0.0, s));
    if (t >= 3600) return fmt::format("{}h{:02}m", t / 3600, t / 60 % 60);
    if (t >= 60) return fmt::format("{}m{:02}s", t / 60, t % 60);
    return fmt::format("{}s", t);
}
} // namespace

// Open MPI hands every rank a pseudo-terminal for its output whatever mpirun's own output is, so
// under mpirun a rank cannot tell a terminal from a log file: there it takes SHARDLAB_TERMINAL=1
// (launch/mpirun_local.sh exports it when its output is a terminal). SHARDLAB_TERMINAL=0: plain.
bool writes_to_terminal(std::FILE* out) {
    const char* said = std::getenv("SHARDLAB_TERMINAL");
    if (said && *said) return std::string(said) == "1";
    return ::isatty(::fileno(out)) != 0 && std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr;
}

int default_log_every(int steps_to_run) {
    return std::max(1, (steps_to_run + 19) / 20);
}

Progress::Progress(int first, int last, int total, int log_every, std::FILE* out)
    : first_(first), last_(last), total_(total),
      every_(log_every > 0 ? log_every : default_log_every(last - first)), out_(out),
      tty_(writes_to_terminal(out)), started_(now_seconds()) {}

Progress::~Progress() {
    clear();
}

bool Progress::logs(const StepLine& s) const {
    return s.step % every_ == 0 || s.step == first_ + 1 || s.step == last_ ||
           s.val_loss.has_value() || !s.note.empty();
}

std::string Progress::log_line(const StepLine& s) const {
    return fmt::format("step {:>5}/{} | loss {:.4f}{} | lr {:.2e} | norm {:.3f} | {:.0f} ms (comm "
                       "{:.0f}) | {:.0f} "
                       "tok/s | peak {:.1f} MB{}\n",
                       s.step, total_, s.loss,
                       s.val_loss ? fmt::format(" | val {:.4f}", *s.val_loss) : "", s.lr,
                       s.grad_norm, s.ms, s.comm_ms, s.tokens_per_s, s.peak_mb,
                       s.note.empty() ? "" : " | " + s.note);
}

// The ETA assumes the remaining steps take as long as this run's steps so far did.
std::string Progress::status_line(const StepLine& s) const {
    const int done = s.step - first_;
    const double per_step = (now_seconds() - started_) / std::max(1, done);
    return fmt::format("step {}/{} | loss {:.4f} | {:.0f} tok/s | ETA {} | peak {:.1f} MB", s.step,
                       total_, s.loss, s.tokens_per_s, duration(per_step * (last_ - s.step)),
                       s.peak_mb);
}

void Progress::step(const StepLine& s) {
    if (logs(s)) {
        clear();
        std::fputs(log_line(s).c_str(), out_);
    }
    // The status line is redrawn at most 10 times a second: a terminal is slow to scroll.
    if (tty_ && s.step < last_ && now_seconds() - last_status_ > 0.1) {
        std::fputs(("\r\033[K" + status_line(s)).c_str(), out_);
        status_shown_ = true;
        last_status_ = now_seconds();
    }
    std::fflush(out_);
}

void Progress::clear() {
    if (!status_shown_) return;
    std::fputs("\r\033[K", out_);
    std::fflush(out_);
    status_shown_ = false;
}

} // namespace shardlab
