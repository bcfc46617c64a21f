// Alpha and beta per collective and link class: for each class of link the layout has, a pair of
// ranks across exactly that class (two ranks of one node: intra_node; the first ranks of two
// nodes: inter_node) times the ring all-gather, reduce-scatter and all-reduce over a sweep of
// sizes on a communicator of its own, while the other ranks wait; the times are fitted per ring
// step (plan/alpha_beta_fit.h). With two ranks every step crosses the one link, so the fit is
// that link's, free of the other class (docs/TIME.md "Timing one link class").
#pragma once

#include "comm/node_layout.h"
#include "model/backend.h"
#include "plan/machine_profile.h"

#include <map>
#include <string>
#include <vector>

namespace shardlab {

struct SweepSpec {
    std::vector<std::size_t> sizes; // the collective's buffer S, at least two
    int warmup = 2, iters = 5;      // calls per timing (collective_seconds)
    int reps = 3;                   // timings per size: the fastest is kept
    DType dtype = DType::f32;
};

// The world ranks that time each class present: "intra_node" (the first node with two ranks)
// and "inter_node" (with two nodes or more); none with one rank.
std::map<std::string, std::vector<int>> link_pairs(const NodeLayout& layout);

// Collective over world. Every rank returns the same profiles (the pair's times are broadcast).
// Throws Error if a pair's bytes crossed another class than the one it times.
std::map<std::string, LinkProfile> measure_links(Backend& backend, Communicator& world,
                                                 const SweepSpec& sweep);

} // namespace shardlab
