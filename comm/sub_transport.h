// SubTransport: a view of some of a parent transport's ranks as a transport of their own, so an
// algorithm written for "ranks 0..n-1" (the ring, halving-doubling) runs inside a node, or across
// the nodes, as one step of a hierarchical collective. Peers are translated to the parent's ranks
// and every exchange goes through the parent — so the parent counts the bytes (by link class),
// and its messages carry the parent's collective tag and watchdog. It lives for one call, inside
// the parent's; the library's own collectives are not available on a view.
#pragma once

#include "comm/transport.h"

#include <vector>

namespace shardlab {

class SubTransport : public Transport {
  public:
    // `members`: the parent's ranks, in this view's rank order; the parent's rank must be one.
    SubTransport(Transport& parent, std::vector<int> members);

    int rank() const override { return rank_; }
    int size() const override { return int(members_.size()); }
    void native(Stream& s, const CollectiveCall& call) override;
    void native_barrier(Stream& s) override;

  protected:
    void post(Stream& s, const std::vector<Transfer>& transfers) override;

  private:
    Transport& parent_;
    std::vector<int> members_;
    int rank_ = 0;
};

} // namespace shardlab
