// The collective algorithms written in shardlab, over the Transport's point-to-point exchanges
// and the backend's element operations only. Each enqueues its steps on the context's stream and
// returns: the result is there once the stream has passed them.
// Buffers hold `count` elements of dtype t; "chunk r" is Chunking{count, N}'s chunk r.
// In-place conventions follow NCCL: all_gather is in place when send == recv + offset(rank),
// reduce_scatter when recv == send + offset(rank), all_reduce / broadcast / reduce when
// send == recv; gather when send == recv + offset(root) at the root, scatter when
// recv == send + offset(root) at the root.
// docs/COLLECTIVES.md draws each one and derives the bytes every rank sends.
#pragma once

#include "comm/collective_context.h"
#include "comm/collective_op.h"

namespace shardlab::algo {

// Ring: N-1 steps; in step k rank r passes chunk (r-k) to r+1. send: chunk(rank); recv: count.
void ring_all_gather(CollectiveContext& c, const void* send, void* recv, std::size_t count,
                     DType t);

// Ring: N-1 steps; chunk j's partial sum starts at rank j+1 and travels the ring to rank j.
// send: count elements; recv: chunk(rank).
void ring_reduce_scatter(CollectiveContext& c, const void* send, void* recv, std::size_t count,
                         DType t, ReduceOp op);

// Ring reduce-scatter into recv's own chunk, then ring all-gather in place.
void ring_all_reduce(CollectiveContext& c, const void* send, void* recv, std::size_t count, DType t,
                     ReduceOp op);

// Scatter from the root, then ring all-gather (van de Geijn): bandwidth-optimal for large buffers.
void scatter_allgather_broadcast(CollectiveContext& c, const void* send, void* recv,
                                 std::size_t count, DType t, int root);

// Ring reduce-scatter, then every rank sends its reduced chunk to the root.
void reduce_scatter_gather_reduce(CollectiveContext& c, const void* send, void* recv,
                                  std::size_t count, DType t, ReduceOp op, int root);

// Direct: each non-root sends its chunk straight to the root. send: chunk(rank); recv at root:
// count.
void direct_gather(CollectiveContext& c, const void* send, void* recv, std::size_t count, DType t,
                   int root);

// Direct: the root sends chunk r straight to rank r. send at root: count; recv: chunk(rank).
void direct_scatter(CollectiveContext& c, const void* send, void* recv, std::size_t count, DType t,
                    int root);

// Halving-doubling (Rabenseifner): recursive-halving reduce-scatter, then recursive-doubling
// all-gather, over the largest power of two p <= N; the N-p extra ranks first fold their buffer
// into a partner and get the result back at the end. log2(p) steps each way instead of N-1.
void halving_doubling_all_reduce(CollectiveContext& c, const void* send, void* recv,
                                 std::size_t count, DType t, ReduceOp op);

// Two-level (c.layout's nodes, all the same size): reduce-scatter inside each node, then across
// nodes among the ranks with the same place in their node. Result: chunk(rank), as the ring's.
void hierarchical_reduce_scatter(CollectiveContext& c, const void* send, void* recv,
                                 std::size_t count, DType t, ReduceOp op);
// Two-level: all-gather across nodes, then inside each node. send: chunk(rank); recv: count.
void hierarchical_all_gather(CollectiveContext& c, const void* send, void* recv, std::size_t count,
                             DType t);
// Three steps: reduce-scatter inside the node, all-reduce of the own piece across nodes,
// all-gather inside the node. Only 2(M-1)/M of a 1/L piece crosses the network per rank.
void hierarchical_all_reduce(CollectiveContext& c, const void* send, void* recv, std::size_t count,
                             DType t, ReduceOp op);

// Dissemination barrier: ceil(log2 N) rounds of empty messages.
void dissemination_barrier(CollectiveContext& c);

} // namespace shardlab::algo
