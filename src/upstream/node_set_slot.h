// NodeSetSlot: where one upstream's current node set is published, apart from the route
// snapshot.
//
// The control thread (a discovery provider's answer, a DNS answer, or the snapshot build for
// IP-literal nodes) Store()s a new immutable NodeSet; workers see it on their next request
// for the upstream, without a route rebuild and without a wake-up: the slot keeps the current
// set's address in an atomic, so a worker's check is one atomic load and one pointer compare
// with the set its picker was built from (Peek() != picker.built_from()). Only on a change
// does it Load() the set (a short lock for a pointer copy) and rebuild that one picker.
//
// Producers dedupe by value before storing (upstream::SameNodes), so a changed pointer is a
// real change. A slot lives as long as the snapshots naming it (shared_ptr): an upstream that
// keeps its key and node source across a reload keeps its slot, hence its set and the
// workers' pickers.
//
// A slot of a chash upstream is made with `chash` set: whoever stores a non-empty set into
// it attaches the set's rings first (NodeSet::chash, upstream::ChashRings::Build, off the
// workers), so that the release store that publishes the pointer also publishes ready rings
// and no worker builds one. The flag is fixed for the slot's life: an upstream whose balancer
// becomes or stops being chash gets a new slot (proxy::UpstreamBuilder).
//
// Whoever stores a set summarizes it first (NodeSet::summary = SummarizeNodes), so that the
// workers' pickers switch to it without reading its nodes; a set stored without a summary
// works, at the cost of a worker reading every node when it switches.
//
// Thread rules: Store() from one thread at a time (the control thread, or the reload job
// before the snapshot is published); Peek() and Load() from any thread. A set replaced by
// Store() is returned to the caller so that it can be released on the control thread once no
// worker or request holds it (see discovery::Directory), never destroyed on a worker by the
// store itself.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "upstream/node_set.h"

namespace turnpike::upstream {

// The empty set every slot starts with (shared, immutable).
const NodeSetConstSharedPtr& EmptyNodeSet();

class NodeSetSlot {
 public:
  NodeSetSlot() : NodeSetSlot(EmptyNodeSet()) {}
  explicit NodeSetSlot(NodeSetConstSharedPtr initial, bool chash = false)
      : value_(initial ? std::move(initial) : EmptyNodeSet()),
        current_(value_.get()),
        chash_(chash) {}
  NodeSetSlot(const NodeSetSlot&) = delete;
  NodeSetSlot& operator=(const NodeSetSlot&) = delete;

  // Whether sets stored here must carry their chash rings (see above).
  bool chash() const { return chash_; }

  // Publishes `set` (null means empty) and returns the set it replaces. REQUIRES: when
  // chash(), a non-empty `set` has its rings (NodeSet::chash).
  NodeSetConstSharedPtr Store(NodeSetConstSharedPtr set) {
    if (!set) set = EmptyNodeSet();
    const NodeSet* raw = set.get();
    {
      std::lock_guard<std::mutex> lock(mu_);
      value_.swap(set);
    }
    current_.store(raw, std::memory_order_release);
    return set;
  }

  // Any thread. The current set's address, only to compare with a set the caller holds: the
  // set behind it may be released at any time, so never dereference it.
  const NodeSet* Peek() const { return current_.load(std::memory_order_acquire); }

  // Any thread. The current set, never null.
  NodeSetConstSharedPtr Load() const {
    std::lock_guard<std::mutex> lock(mu_);
    return value_;
  }

 private:
  mutable std::mutex mu_;
  NodeSetConstSharedPtr value_;
  std::atomic<const NodeSet*> current_;
  const bool chash_;
};

using NodeSetSlotSharedPtr = std::shared_ptr<NodeSetSlot>;

}  // namespace turnpike::upstream
