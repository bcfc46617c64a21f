// MPI's lifetime for a program that communicates: started with the thread level the comm streams
// need, finalized once on the way out.
#pragma once

namespace shardlab {

// MPI_Init / MPI_Finalize for the commands that communicate.
class MpiSession {
  public:
    MpiSession(int& argc, char**& argv);
    ~MpiSession();
    MpiSession(const MpiSession&) = delete;
    MpiSession& operator=(const MpiSession&) = delete;
};

} // namespace shardlab
