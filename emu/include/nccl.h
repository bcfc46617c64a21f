// NCCL as the SIMT emulator provides it (test infrastructure: never in a real CUDA build). With
// -DSHARDLAB_CUDA=EMU, `#include <nccl.h>` lands here: the subset of NCCL's API that shardlab
// calls, with NCCL's names, enum values and signatures (checked against NCCL 2.28's header), run
// over MPI by emu/nccl.cpp. Each operation is a task on the emulated stream, as NCCL's kernels are.
//
// What the emulator asks beyond NCCL (it is built on MPI, not on a bootstrap of its own):
//  - MPI is initialised with MPI_THREAD_MULTIPLE before ncclCommInitRank (the tasks call MPI from
//    the streams' threads);
//  - ncclCommInitRank is collective over MPI_COMM_WORLD: every process calls it at the same point,
//    from one thread, even those that are not members (each passes the id of its own communicator);
//  - the operations of one communicator on several streams must not run concurrently (MPI matches
//    a communicator's collectives in the order they are posted);
//  - ncclCommDestroy expects the streams that used the communicator to have been synchronised.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstddef>

#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 9
#define NCCL_SUFFIX ""
// Since 2.9 the code is major*10000 + minor*100 + patch (before, major*1000 + minor*100 + patch).
#define NCCL_VERSION(X, Y, Z)                                                                      \
    (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z) : (X)*10000 + (Y)*100 + (Z))
#define NCCL_VERSION_CODE NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH)

extern "C" {

typedef struct ncclComm* ncclComm_t; // a communicator: one rank's handle
#define NCCL_COMM_NULL NULL

// Made by one process (ncclGetUniqueId) and handed to every member, which names the communicator.
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
    char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
    ncclNumResults = 8
} ncclResult_t;

// The built-in reductions (the emulator has no user-defined ones). Avg is the sum divided by the
// number of ranks.
typedef enum {
    ncclSum = 0,
    ncclProd = 1,
    ncclMax = 2,
    ncclMin = 3,
    ncclAvg = 4,
    ncclNumOps = 5,
    ncclMaxRedOp = 0x7fffffff
} ncclRedOp_t;

typedef enum {
    ncclInt8 = 0,
    ncclChar = 0,
    ncclUint8 = 1,
    ncclInt32 = 2,
    ncclInt = 2,
    ncclUint32 = 3,
    ncclInt64 = 4,
    ncclUint64 = 5,
    ncclFloat16 = 6,
    ncclHalf = 6,
    ncclFloat32 = 7,
    ncclFloat = 7,
    ncclFloat64 = 8,
    ncclDouble = 8,
    ncclBfloat16 = 9,
    ncclFloat8e4m3 = 10, // moved (broadcast, gather, send) but not reduced by the emulator
    ncclFloat8e5m2 = 11,
    ncclNumTypes = 12
} ncclDataType_t;

// --- library and communicators ------------------------------------------------------------------

ncclResult_t ncclGetVersion(int* version);
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);
// Blocks until every member has called it. Emulator: collective over MPI_COMM_WORLD (see above).
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
// Frees the communicator; call it once the streams that used it are synchronised.
ncclResult_t ncclCommDestroy(ncclComm_t comm);
// Frees the communicator without waiting: operations not yet started are dropped and a running one
// stops waiting for its peers.
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank);
// ncclSuccess unless an operation of this communicator failed while it ran on its stream.
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);

const char* ncclGetErrorString(ncclResult_t result);
// What went wrong in this thread's last failed call (the comm argument is not needed).
const char* ncclGetLastError(ncclComm_t comm);

// --- groups and point-to-point -----------------------------------------------------------------

// Between the outermost Start and End, calls are recorded and issued together at End, so that a
// rank's sends and receives progress together (a ring step cannot deadlock). Groups nest.
ncclResult_t ncclGroupStart();
ncclResult_t ncclGroupEnd();

// The peer must post the matching call with the same count and datatype.
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);

// --- collectives (every member calls them in the same order) -----------------------------------

// In place when sendbuff == recvbuff.
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream);
// sendbuff holds nranks blocks of recvcount; rank r gets the reduction of block r. In place when
// recvbuff == sendbuff + rank * recvcount.
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream);
// recvbuff gets nranks blocks of sendcount, rank r's at r * sendcount. In place when
// sendbuff == recvbuff + rank * sendcount.
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
// root's sendbuff to every rank's recvbuff. In place when sendbuff == recvbuff.
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
// The older, always in-place broadcast.
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream);
// The reduction lands in root's recvbuff (other ranks' recvbuff may be NULL). In place when
// sendbuff == recvbuff.
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);

} // extern "C"

namespace shardlab::emu {
// Test support: the largest MPI message the emulator sends (messages above it are cut into pieces
// of this size, both sides alike), 2^30 bytes unless set. A test sets it small, on every rank
// alike, to exercise the cutting that messages above INT_MAX bytes need; it applies to the
// operations called after it.
void nccl_set_piece_bytes(std::size_t bytes);
} // namespace shardlab::emu
