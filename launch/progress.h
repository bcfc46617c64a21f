// Progress: what `shardlab train` prints while it runs. A log line every K steps (default: about 20
// lines per run), at every validation, at the first and the last step, and at every fp16 step
// skipped for an overflow (other skipped steps get a line on stderr); on a terminal, between them,
// one status line rewritten in place (step/total, loss, tokens/s, ETA, peak memory). Not on a
// terminal (a log file, CI), only the log lines, at the same cadence.
#pragma once

#include <cstdio>
#include <optional>
#include <string>

namespace shardlab {

// One finished step, as the line shows it.
struct StepLine {
    int step = 0; // 1-based
    double loss = 0, lr = 0, grad_norm = 0, ms = 0, comm_ms = 0, tokens_per_s = 0, peak_mb = 0;
    std::optional<double> val_loss;
    std::string note; // e.g. "overflow: skipped, loss scale 32768"
};

// Whether `out` reaches a terminal (see SHARDLAB_TERMINAL in progress.cpp for mpirun's ranks).
bool writes_to_terminal(std::FILE* out);

// K for `steps` steps to run: --log-every when given, else about 20 lines.
int default_log_every(int steps_to_run);

class Progress {
  public:
    // Steps first+1 .. last of `total` will run; the status line only if `out` is a terminal.
    Progress(int first, int last, int total, int log_every, std::FILE* out);
    ~Progress(); // leaves the terminal on a fresh line
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    void step(const StepLine& s);
    // Clears the status line, so whatever is printed next starts a clean line.
    void clear();

  private:
    bool logs(const StepLine& s) const;
    std::string log_line(const StepLine& s) const;
    std::string status_line(const StepLine& s) const;

    int first_, last_, total_, every_;
    std::FILE* out_;
    bool tty_;
    bool status_shown_ = false;
    double started_ = 0, last_status_ = 0;
};

} // namespace shardlab
