// Implementation of comm/gather_to_root.h.
#include "comm/gather_to_root.h"

namespace shardlab {

std::vector<std::string> gather_to_root(const std::string& mine, MPI_Comm comm) {
    int n = 0, r = 0;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    int len = int(mine.size());
    std::vector<int> lens(n), displs(n);
    MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, comm);
    int total = 0;
    for (int i = 0; i < n; ++i) displs[i] = total, total += lens[i];
    std::string all(std::size_t(r == 0 ? total : 0), '\0');
    MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0,
                comm);
    std::vector<std::string> out;
    if (r == 0)
        for (int i = 0; i < n; ++i)
            out.push_back(all.substr(std::size_t(displs[i]), std::size_t(lens[i])));
    return out;
}

} // namespace shardlab
