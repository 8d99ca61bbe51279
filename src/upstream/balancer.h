// Balancer: how a worker chooses a node of an upstream (reference §3.3).
//
// Split Pingora-style into a build part and a pick part:
//   - Build() turns an immutable NodeSet into the picker's own structures. It runs on the
//     worker, off the per-request path: when the worker first sees a node-set pointer (a new
//     snapshot, or a node set a discovery provider or the resolver published), never per
//     request. It may allocate.
//   - Pick() runs per request attempt: bounded, allocation-free, and never returns a node the
//     request already tried (TriedSet), so retries always move on and end.
//
// A Picker belongs to one worker (worker scope) and is not thread-safe. It keeps a reference
// to the set it was built from: the worker compares that pointer with the upstream's current
// one (upstream::NodeSetSlot::Peek) to know whether to rebuild, and a request pins it for the
// whole exchange (one refcount, see Worker::CurrentNodes).
//
// Kept in src/ rather than include/turnpike/: a balancer works on Node, NodeSet and TriedSet,
// which are internal types (socket addresses, the node's prepared Host header), and all
// balancers APISIX knows (roundrobin, chash, ewma, least_conn) are built in. It moves to the
// public include directory with those types if third-party balancers ever become a goal.
#pragma once

#include <cstdint>
#include <memory>
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

  // For scans that test many indexes: the bits of the indexes below 64, and whether any
  // index of 64 or more was added (then Contains() is needed for those).
  uint64_t low_bits() const { return bits_; }
  bool has_high() const { return !overflow_.empty(); }

  // Adds every index of `other` (keeps this set's capacity: no allocation once warm).
  void Merge(const TriedSet& other);

 private:
  uint64_t bits_ = 0;
  std::vector<uint32_t> overflow_;
  size_t count_ = 0;
};

class Picker {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  virtual ~Picker() = default;

  // Worker, off the request path. Rebuilds the picker for `set` (never null) and keeps a
  // reference to it. Node health (set_down) is reset: indexes refer to the old set.
  virtual void Build(NodeSetConstSharedPtr set) = 0;

  // Worker, hot path. The index of a node of built_from() not in `tried` (nor down, unless
  // every untried node is down), or kNone when none is left, the set is empty or Build() was
  // never called. Bounded, no allocation. Costs are stated by each implementation.
  virtual uint32_t Pick(const TriedSet& tried) = 0;

  const NodeSet* built_from() const { return set_.get(); }
  const NodeSetConstSharedPtr& set() const { return set_; }

  // Room for health checks (none exist yet, so nothing calls this today): nodes of
  // built_from() that a checker marked unhealthy. Pick() skips them, except that when every
  // untried node is down all are used (fail-open, reference §3.4).
  void set_down(const TriedSet& down) { down_ = down; }
  const TriedSet& down() const { return down_; }

 protected:
  NodeSetConstSharedPtr set_;
  TriedSet down_;
};

// The balancer kinds of `upstream.type`. Only round robin exists; the config warns and uses
// it for the others.
enum class BalancerType : uint8_t { kRoundRobin };

// Worker, off the request path: a new, unbuilt picker of `type`.
std::unique_ptr<Picker> NewPicker(BalancerType type);

// Worker, rare path: a stateless choice in `set` for a request whose pinned set is no longer
// the one its worker's picker is built from (the set changed between two attempts of one
// request). The first untried node of the highest priority group, preferring weight > 0, or
// kNone. O(nodes), no allocation.
uint32_t PickUntried(const NodeSet& set, const TriedSet& tried);

}  // namespace turnpike::upstream
