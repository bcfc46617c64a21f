// Small helpers the subcommands share: size suffixes, the launcher's rank before MPI starts, JSON
// files, byte formatting, and the error policy (run_guarded). Comma lists are flag_checks.h's. The
// agreement helpers and the MPI session are comm/'s (comm/agreement.h, comm/gather_to_root.h,
// comm/mpi_session.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mpi.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace shardlab {

// "1M" -> 1048576; suffixes K, M, G (powers of 1024, as nccl-tests), optional trailing B.
std::size_t parse_size(const std::string& text);
// This process's rank as the launcher (mpirun, Slurm) announced it; 0 when run alone.
int launcher_rank();
// Writes j (indented) to path; throws Error naming the path when it cannot.
void write_json_file(const std::string& path, const nlohmann::json& j);
// Outputs are checked before the work that fills them, so a mistake is a UsageError naming `what`
// (the flag) and the fix, not a failure after the work is done: the directory exists and a file
// can be created there (the Python tools' outputs too); a JSON output names a file in one.
void check_writable_directory(const std::string& dir, const std::string& what);
void check_json_output(const std::string& path, const std::string& flag);

// A size for a sentence, in the unit that shows it: "8.2 KB", "38.8 MB", "1.25 GB" (powers of
// 1000).
std::string short_bytes(double bytes);

// Runs a command body with shardlab's error policy. A UsageError before MPI starts (or on a
// single rank) prints once and returns 2; one after MPI started, on one rank of several, cannot be
// known to the others, so — like any other error — it prints with its rank and aborts every rank
// through MPI_Abort: no rank waits forever for one that stopped.
int run_guarded(const std::function<int()>& body);

} // namespace shardlab
