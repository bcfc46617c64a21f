// Stopping a run cleanly from outside: the first SIGINT (Ctrl-C), SIGTERM (Slurm's and
// Kubernetes' "please stop"), SIGUSR1 (`srun --signal=USR1@120`, `kill -USR1 <mpirun pid>`,
// which Open MPI forwards) or SIGHUP (the terminal closed) asks the run to save a checkpoint at
// the end of the current step and exit; a second one aborts at once. So does SIGPIPE, an output
// closed (`| tee` ended by the same Ctrl-C, `| head`), which never aborts: the lost output is
// pointed at /dev/null and the run goes on to its checkpoint. Ranks agree at each step boundary, so
// a signal that reaches one rank stops them all at the same step.
//
// What it prints is true to what will happen: a SIGTERM from Open MPI's mpirun (this rank's
// parent) is mpirun ending the job — on Ctrl-C or SIGTERM to mpirun, or after another rank
// failed — and SIGKILL follows a second later, so no checkpoint is promised then, and the message
// says how to stop with one (launch/mpirun_local.sh, or SIGUSR1 to mpirun). docs/RELIABILITY.md.
//
// A signal handler can only reach the program through globals, so this file holds the program's
// one global state: the flag the handler sets and the training loop reads, and what the handler
// needs, set before any signal (the previous handlers, the launcher's pid, /dev/null for a lost
// output, its two messages).
#pragma once

namespace shardlab {

class StopRequest {
  public:
    StopRequest();  // installs the handlers
    ~StopRequest(); // restores the previous ones
    StopRequest(const StopRequest&) = delete;
    StopRequest& operator=(const StopRequest&) = delete;

    // The signal this rank received since the run began (0: none). Ranks agree on it through a
    // collective the caller runs (a watched one: a hung rank must not hang the agreement).
    int requested() const;
};

const char* signal_name(int signo); // "SIGINT", ...

} // namespace shardlab
