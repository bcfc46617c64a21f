// The table itself: every algorithm shardlab has, adapted from its signature to a CollectiveCall.
#include "comm/algorithm_table.h"

#include "comm/algorithms.h"
#include "core/error.h"

namespace shardlab {

Algo parse_algo(const std::string& name) {
    if (name == "ring") return Algo::ring;
    if (name == "native" || name == "mpi") return Algo::native;
    if (name == "hd") return Algo::hd;
    if (name == "hier") return Algo::hier;
    throw UsageError("unknown algorithm '" + name + "'; use ring, hd, hier or native");
}

const char* algo_name(Algo a) {
    switch (a) {
    case Algo::ring:
        return "ring";
    case Algo::native:
        return "native";
    case Algo::hd:
        return "hd";
    case Algo::hier:
        return "hier";
    }
    return "?";
}

namespace {
using Op = CollectiveOp;
using C = CollectiveContext;
using K = CollectiveCall;

void native(C& c, const K& k) {
    c.transport.native(c.stream, k);
}

const AlgorithmRow kTable[] = {
    {Op::allgather, Algo::ring,
     [](C& c, const K& k) { algo::ring_all_gather(c, k.send, k.recv, k.count, k.dtype); }},
    {Op::reduce_scatter, Algo::ring,
     [](C& c, const K& k) {
         algo::ring_reduce_scatter(c, k.send, k.recv, k.count, k.dtype, k.reduce);
     }},
    {Op::allreduce, Algo::ring,
     [](C& c, const K& k) {
         algo::ring_all_reduce(c, k.send, k.recv, k.count, k.dtype, k.reduce);
     }},
    {Op::broadcast, Algo::ring,
     [](C& c, const K& k) {
         algo::scatter_allgather_broadcast(c, k.send, k.recv, k.count, k.dtype, k.root);
     }},
    {Op::reduce, Algo::ring,
     [](C& c, const K& k) {
         algo::reduce_scatter_gather_reduce(c, k.send, k.recv, k.count, k.dtype, k.reduce, k.root);
     }},
    {Op::gather, Algo::ring,
     [](C& c, const K& k) { algo::direct_gather(c, k.send, k.recv, k.count, k.dtype, k.root); }},
    {Op::scatter, Algo::ring,
     [](C& c, const K& k) { algo::direct_scatter(c, k.send, k.recv, k.count, k.dtype, k.root); }},
    {Op::allreduce, Algo::hd,
     [](C& c, const K& k) {
         algo::halving_doubling_all_reduce(c, k.send, k.recv, k.count, k.dtype, k.reduce);
     }},
    {Op::reduce_scatter, Algo::hier,
     [](C& c, const K& k) {
         algo::hierarchical_reduce_scatter(c, k.send, k.recv, k.count, k.dtype, k.reduce);
     }},
    {Op::allgather, Algo::hier,
     [](C& c, const K& k) { algo::hierarchical_all_gather(c, k.send, k.recv, k.count, k.dtype); }},
    {Op::allreduce, Algo::hier,
     [](C& c, const K& k) {
         algo::hierarchical_all_reduce(c, k.send, k.recv, k.count, k.dtype, k.reduce);
     }},
    {Op::allgather, Algo::native, native},
    {Op::reduce_scatter, Algo::native, native},
    {Op::allreduce, Algo::native, native},
    {Op::broadcast, Algo::native, native},
    {Op::reduce, Algo::native, native},
    {Op::gather, Algo::native, native},
    {Op::scatter, Algo::native, native},
};
} // namespace

bool has_algorithm(CollectiveOp op, Algo algo) {
    for (const AlgorithmRow& row : kTable)
        if (row.op == op && row.algo == algo) return true;
    return false;
}

const AlgorithmRow& find_algorithm(CollectiveOp op, Algo algo) {
    std::string have;
    for (const AlgorithmRow& row : kTable) {
        if (row.op == op && row.algo == algo) return row;
        if (row.op == op) have += std::string(have.empty() ? "" : ", ") + algo_name(row.algo);
    }
    throw UsageError(std::string("--algo ") + algo_name(algo) + " has no " + op_name(op) + "; " +
                     op_name(op) + " runs with " + have);
}

std::string stats_key(CollectiveOp op, Algo algo) {
    return algo == Algo::ring ? std::string(op_name(op))
                              : std::string(op_name(op)) + "/" + algo_name(algo);
}

} // namespace shardlab
