// Weighted round robin over a NodeSet (smooth weighted round robin, as nginx's upstream).
//
// Split Pingora-style: Build() runs when the worker first sees a NodeSet pointer (off the
// per-request path), Pick() runs per request. A picker belongs to one worker; not
// thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "upstream/node_set.h"

namespace turnpike::upstream {

// Nodes already tried by one request (bit i = node index i). Requests never retry a node.
// Node sets larger than 64 fall back to a small vector.
class TriedSet {
 public:
  bool Contains(uint32_t i) const;
  void Add(uint32_t i);
  void Clear();
  size_t count() const { return count_; }

 private:
  uint64_t bits_ = 0;
  std::vector<uint32_t> overflow_;
  size_t count_ = 0;
};

class RoundRobinPicker {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // Rebuilds the picker for `set`. Keeps a reference to `set`.
  void Build(NodeSetConstSharedPtr set);
  const NodeSet* built_from() const { return set_.get(); }

  // Worker, hot path. Returns the index of the next node to use that is not in `tried`, or
  // kNone when every node was tried. Priority groups: only the highest-priority group is
  // used until all its nodes are tried, then the next lower group. Weight 0 nodes are
  // picked only when nothing else in reach is left. No allocation.
  uint32_t Pick(const TriedSet& tried);

 private:
  struct Slot {
    uint32_t index;
    int weight;
    int64_t current;
  };
  NodeSetConstSharedPtr set_;
  std::vector<std::vector<Slot>> groups_;  // by priority, highest first
};

}  // namespace turnpike::upstream
