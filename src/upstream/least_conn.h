// Least connections over a NodeSet (`type: least_conn`, reference §3.3), as APISIX's
// balancer/least_conn.lua: the node with the lowest (in-flight attempts + 1) / weight, counted
// per worker (APISIX counts per nginx worker too).
//
// An attempt is in flight from its Pick() to its OnAttemptEnd() (the caller reports every
// pick once, through a PickLease: a failed attempt before its retry, the last one when the
// request ends). Equal scores go to the node picked least recently, so idle nodes of equal
// weight take turns. Priority groups as everywhere (the highest group with an untried node);
// nodes of weight 0 only when no untried node with a weight is left (APISIX's score 1/0 is
// infinite). A rebuild (the node set changed) starts the counts from zero, as APISIX's new
// picker for a new upstream version does; the attempts still in flight then are not counted.
//
// A Picker (upstream/balancer.h); one worker, not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "upstream/balancer.h"
#include "upstream/node_set.h"

namespace turnpike::upstream {

class LeastConnPicker final : public Picker {
 public:
  LeastConnPicker() : Picker(BalancerType::kLeastConn) {}
  using Picker::Pick;

  // Worker, hot path. The untried node with the lowest score, counted in flight at once.
  // Cost: a first attempt takes the top of the group's heap, O(log nodes) to restore it; a
  // retry (or with nodes down) scans the group, O(nodes). No allocation.
  uint32_t Pick(const PickRequest& request) override;

  bool tracks_attempts() const override { return true; }
  // The attempt on `index` ended: one fewer in flight. O(log nodes).
  void OnAttemptEnd(uint32_t index, uint64_t now_ms, uint64_t elapsed_ms, bool final) override;

  // Tests: attempts in flight on node `index`.
  uint32_t active(uint32_t index) const { return state_[index].active; }

 private:
  struct NodeState {
    uint64_t weight = 0;  // 0: not in a heap (weight 0)
    uint32_t active = 0;
    uint32_t group = 0;
    uint32_t pos = 0;     // position in its group's heap
    uint64_t picked = 0;  // pick sequence number of its latest pick (0: never)
  };

  // Build(): O(nodes log nodes); O(nodes) without reading a node for a set whose summary
  // (NodeSet::summary) says one priority and one weight: only the picker's own arrays are
  // written.
  void Rebuild(const NodeSet* previous) override;
  // Does node a rank before node b: lower (active + 1) / weight, then picked earlier.
  bool Before(uint32_t a, uint32_t b) const {
    const NodeState& x = state_[a];
    const NodeState& y = state_[b];
    const uint64_t lx = (uint64_t{x.active} + 1) * y.weight;
    const uint64_t ly = (uint64_t{y.active} + 1) * x.weight;
    return lx != ly ? lx < ly : x.picked < y.picked;
  }
  void SiftUp(std::vector<uint32_t>& heap, uint32_t pos);
  void SiftDown(std::vector<uint32_t>& heap, uint32_t pos);
  uint32_t PickAvoiding(const TriedSet& avoid);
  void Take(uint32_t index);

  std::vector<NodeState> state_;              // by node index
  std::vector<std::vector<uint32_t>> heaps_;  // by priority group, highest first
  std::vector<uint32_t> zero_weight_;         // weight-0 nodes, highest priority first
  uint64_t picks_ = 0;
  TriedSet avoid_;
};

}  // namespace turnpike::upstream
