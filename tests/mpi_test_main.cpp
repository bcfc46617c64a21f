// GoogleTest main for tests run under `mpirun -np K`: every rank runs every test; rank 0 prints
// the usual report, the others print only their failures (tagged with the rank); the exit code
// is the worst over all ranks, so any rank's failure fails the CTest case.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

namespace {
class FailureOnlyPrinter : public ::testing::EmptyTestEventListener {
  public:
    explicit FailureOnlyPrinter(int rank) : rank_(rank) {}
    void OnTestPartResult(const ::testing::TestPartResult& r) override {
        if (r.failed())
            std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                         r.file_name() ? r.file_name() : "?", r.line_number(), r.message());
    }

  private:
    int rank_;
};
} // namespace

int main(int argc, char** argv) {
    int provided = 0; // shardlab's comm streams call MPI from their own threads
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    ::testing::InitGoogleTest(&argc, argv);
    if (rank != 0) {
        auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
        delete listeners.Release(listeners.default_result_printer());
        listeners.Append(new FailureOnlyPrinter(rank));
    }
    int rc = RUN_ALL_TESTS();
    MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return rc;
}
