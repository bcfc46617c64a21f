#!/usr/bin/env python3
"""The layers have no back-edges: core <- comm <- model <- optim <- offload <- plan <- measure <- train <- launch.
Every #include "folder/..." in a source file must name its own folder or one to its left
(model/kernels counts as model, core/cuda as core). Also: no header of comm/ includes mpi.h
except the MPI transport's own files, so the collective names and the communication model stay
free of MPI. Usage: layers_check.py REPO_ROOT"""
import pathlib
import re
import sys

ORDER = ["core", "comm", "model", "optim", "offload", "plan", "measure", "train", "launch"]
MPI_ALLOWED = {"comm/mpi_transport.h", "comm/mpi_watchdog.h", "comm/mpi_collectives.h", "comm/mpi_error.h",
               "comm/communicator.h",   # the communicator is built from an MPI communicator
               "comm/nccl_transport.h",  # NCCL's unique id travels over MPI
               "comm/watched_calls.h",   # the watched MPI calls outside the collectives: MPI by name
               "comm/agreement.h", "comm/gather_to_root.h",  # the ranks agree over an MPI communicator
               "comm/mpi_session.h",     # MPI_Init / MPI_Finalize
               "comm/node_layout.h",     # nodes found with MPI_COMM_TYPE_SHARED
               "comm/world_ranks.h",     # a group's ranks translated to MPI_COMM_WORLD's
               "comm/process_groups.h"}  # groups split from the world's MPI communicator
root = pathlib.Path(sys.argv[1])
bad = []
for layer in ORDER:
    for path in sorted((root / layer).rglob("*")):
        if path.suffix not in (".h", ".cpp", ".cu"):
            continue
        rel = path.relative_to(root).as_posix()
        for n, line in enumerate(path.read_text().splitlines(), 1):
            m = re.match(r'\s*#\s*include\s+"([a-z_]+)/', line)
            if m and m.group(1) in ORDER and ORDER.index(m.group(1)) > ORDER.index(layer):
                bad.append(f"{rel}:{n}: {layer}/ includes {m.group(1)}/ (a back-edge): {line.strip()}")
            if layer == "comm" and rel.endswith(".h") and rel not in MPI_ALLOWED and re.match(r"\s*#\s*include\s+<mpi\.h>", line):
                bad.append(f"{rel}:{n}: includes mpi.h; keep MPI inside the MPI transport")
for b in bad:
    print(b)
print(f"{'FAIL' if bad else 'ok'}: {len(bad)} back-edge(s) across {', '.join(ORDER)}")
sys.exit(1 if bad else 0)
