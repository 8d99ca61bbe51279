// HealthSlot: where a health checker meets the workers for one upstream with
// `checks` (reference §3.4). Three one-way channels, none of which takes a lock
// on a worker's request path:
//
//   - first use (worker -> checker): APISIX creates an upstream's checker on
//   the first
//     request that uses it. A worker calls MarkUsed() when it builds or
//     refreshes the upstream's picker (a relaxed load, and a store the first
//     time only); the checker polls used() on its tick and starts probing then.
//     Unused upstreams are never probed.
//   - health (checker -> workers): the checker Store()s an immutable
//   HealthSnapshot (the
//     nodes it found unhealthy) whenever that set changes; a worker compares
//     Peek() with the snapshot its picker was marked from, and only on a change
//     Load()s it (a short lock for a pointer copy) and marks the picker's nodes
//     down (off the per-request path, as a node-set change rebuilds a picker).
//   - passive reports (workers -> checker): with `checks.passive`, each worker
//   owns one
//     single-producer ring here and Report()s every attempt's outcome into it
//     (a few relaxed stores); the checker drains the rings on its tick, in
//     order per worker. A full ring drops the report and counts it (dropped()).
//
// Shared (std::shared_ptr) by the snapshots naming the upstream and the
// checker; carried over a reload when the upstream keeps its key and its
// `checks`, so its checker, its targets' health and the first-use flag survive
// the reload.
//
// Thread rules: Store() on the control thread; Peek(), Load(), MarkUsed() any
// thread; Report(w, ...) only by worker w (one producer per ring); Drain() only
// by the checker (the consumer).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "upstream/balancer.h"
#include "upstream/health_state.h"
#include "upstream/node_set.h"

namespace turnpike::upstream {

// The nodes a checker found unhealthy, by node address (ip text and node port),
// sorted. A worker turns it into indexes of its picker's node set (Down()).
struct HealthSnapshot {
  struct Addr {
    std::string ip;  // as Node::ip_text
    uint16_t port = 0;
    auto operator<=>(const Addr&) const = default;
  };
  std::vector<Addr> down;

  // Whether `node` is down: O(log down).
  bool IsDown(const Node& node) const;
};

using HealthSnapshotConstSharedPtr = std::shared_ptr<const HealthSnapshot>;

// One passive report: the node an attempt went to (its address) and how it
// ended.
struct PassiveReport {
  NodeAddr addr{};      // the node's address (Node::addr), port included
  uint16_t status = 0;  // the upstream's HTTP status (kSuccess / kHttpFailure), else 0
  Outcome outcome = Outcome::kSuccess;
};

class HealthSlot {
 public:
  static constexpr size_t kRingSize = 1024;  // reports per worker between two drains

  // `passive_workers`: the number of workers (one ring each) when the upstream
  // has passive checks, 0 otherwise.
  explicit HealthSlot(int passive_workers);
  HealthSlot(const HealthSlot&) = delete;
  HealthSlot& operator=(const HealthSlot&) = delete;

  // ---- first use
  bool used() const { return used_.load(std::memory_order_relaxed); }
  // Any thread: the upstream served a request.
  void MarkUsed() {
    if (!used_.load(std::memory_order_relaxed)) used_.store(true, std::memory_order_relaxed);
  }

  // ---- health
  // Control thread. Publishes `snapshot` (never null); returns the one it
  // replaces.
  HealthSnapshotConstSharedPtr Store(HealthSnapshotConstSharedPtr snapshot);
  // Any thread. The current snapshot's address, only to compare; null before
  // the first Store.
  const HealthSnapshot* Peek() const { return current_.load(std::memory_order_acquire); }
  // Any thread. The current snapshot (null before the first Store).
  HealthSnapshotConstSharedPtr Load() const {
    std::lock_guard<std::mutex> lock(mu_);
    return value_;
  }

  // ---- passive reports
  bool passive() const { return !rings_.empty(); }
  // Worker `worker`, hot path: reports an attempt at `node`. No allocation, no
  // lock. REQUIRES: passive() and 0 <= worker < the passive_workers given.
  void Report(int worker, const Node& node, Outcome outcome, int status) {
    Ring& ring = *rings_[static_cast<size_t>(worker)];
    const uint64_t head = ring.head.load(std::memory_order_relaxed);
    if (head - ring.tail.load(std::memory_order_acquire) >= kRingSize) {
      ring.dropped.store(ring.dropped.load(std::memory_order_relaxed) + 1,
                         std::memory_order_relaxed);
      return;
    }
    PassiveReport& r = ring.items[head & (kRingSize - 1)];
    r.addr = node.addr;
    r.status = static_cast<uint16_t>(status);
    r.outcome = outcome;
    ring.head.store(head + 1, std::memory_order_release);
  }
  // The checker: calls f(report) for every report queued, oldest first per
  // worker.
  template <typename F>
  void Drain(F&& f) {
    for (auto& ring : rings_) {
      const uint64_t head = ring->head.load(std::memory_order_acquire);
      uint64_t tail = ring->tail.load(std::memory_order_relaxed);
      for (; tail != head; ++tail) {
        f(static_cast<const PassiveReport&>(ring->items[tail & (kRingSize - 1)]));
      }
      ring->tail.store(tail, std::memory_order_release);
    }
  }
  // Reports dropped so far because a ring was full (any thread).
  uint64_t dropped() const;

 private:
  struct Ring {
    alignas(64) std::atomic<uint64_t> head{0};  // written by the worker
    alignas(64) std::atomic<uint64_t> tail{0};  // written by the checker
    std::atomic<uint64_t> dropped{0};
    PassiveReport items[kRingSize];
  };

  std::atomic<bool> used_{false};
  mutable std::mutex mu_;
  HealthSnapshotConstSharedPtr value_;
  std::atomic<const HealthSnapshot*> current_{nullptr};
  std::vector<std::unique_ptr<Ring>> rings_;
};

using HealthSlotSharedPtr = std::shared_ptr<HealthSlot>;

// Worker, off the request path: the indexes of `set`'s nodes that `health`
// marks down.
void MarkDown(const HealthSnapshot& health, const NodeSet& set, TriedSet* down);

}  // namespace turnpike::upstream
