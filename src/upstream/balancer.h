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

#include <bit>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
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

  // Calls f(index) for every index added (those below 64 first, ascending). O(count).
  template <typename F>
  void ForEach(F&& f) const {
    for (uint64_t bits = bits_; bits != 0; bits &= bits - 1) {
      f(static_cast<uint32_t>(std::countr_zero(bits)));
    }
    for (uint32_t i : overflow_) f(i);
  }

 private:
  uint64_t bits_ = 0;
  std::vector<uint32_t> overflow_;
  size_t count_ = 0;
};

// What one pick may use besides the request's tried nodes. Filled by the caller per attempt;
// each balancer reads what it needs and ignores the rest.
struct PickRequest {
  const TriedSet* tried = nullptr;  // never null
  uint32_t hash = 0;                // chash: the hash of the request's key (HashKey::Hash)
  uint64_t now_ms = 0;              // ewma: the worker loop's clock (uv_now), milliseconds
};

// The balancer kinds of `upstream.type` (reference §3.3).
enum class BalancerType : uint8_t { kRoundRobin, kChash, kLeastConn, kEwma };

// "roundrobin", "chash", "least_conn", "ewma".
std::string_view BalancerTypeName(BalancerType type);

class Picker {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  explicit Picker(BalancerType type) : type_(type) {}
  virtual ~Picker() = default;
  Picker(const Picker&) = delete;
  Picker& operator=(const Picker&) = delete;

  BalancerType type() const { return type_; }

  // Worker, off the request path. Rebuilds the picker for `set` (never null) and keeps a
  // reference to it. Node health (set_down) and per-node state (in-flight counts, latencies)
  // are reset: indexes refer to the old set. epoch() changes.
  void Build(NodeSetConstSharedPtr set) {
    ++epoch_;
    down_.Clear();
    down_source_.reset();
    const NodeSetConstSharedPtr previous = std::exchange(set_, std::move(set));
    Rebuild(previous.get());
  }

  // Worker, hot path. The index of a node of built_from() not in `*request.tried` (nor down,
  // unless every untried node is down), or kNone when none is left, the set is empty or
  // Build() was never called. Bounded, no allocation. Costs are stated by each
  // implementation. A picker that tracks attempts (tracks_attempts()) counts the pick as an
  // attempt in flight until OnAttemptEnd() for it.
  virtual uint32_t Pick(const PickRequest& request) = 0;
  // The same with nothing but the tried set (hash 0, time 0).
  uint32_t Pick(const TriedSet& tried) {
    PickRequest request;
    request.tried = &tried;
    return Pick(request);
  }

  // Worker, hot path; a hint for prefetching only, never relied upon. The node the
  // `ahead`-th first-attempt pick from now (1: the next one) will return if nothing changes
  // meanwhile (no retry, no rebuild, no health mark), when the picker knows it in O(1); kNone
  // otherwise (the default: a pick that depends on the request or on load cannot be told).
  virtual uint32_t Ahead(uint32_t /*ahead*/) const { return kNone; }

  // Whether Pick() wants to hear when each attempt ends (least_conn's in-flight counts,
  // ewma's latencies). The caller then reports every pick exactly once, through a
  // PickLease, so that a count never drifts.
  virtual bool tracks_attempts() const { return false; }
  // Worker. The attempt that Pick() returned `index` for, under the current epoch(), ended
  // at `now_ms` (PickRequest's clock), `elapsed_ms` after its pick; `final` when it was the
  // request's last attempt (its answer, or its last failure), as APISIX reports a request's
  // latency once, in its log phase. Never called for a pick of an earlier epoch.
  virtual void OnAttemptEnd(uint32_t /*index*/, uint64_t /*now_ms*/, uint64_t /*elapsed_ms*/,
                            bool /*final*/) {}

  const NodeSet* built_from() const { return set_.get(); }
  const NodeSetConstSharedPtr& set() const { return set_; }
  // Counts Build() calls: a pick's report is for the build it was made under.
  uint64_t epoch() const { return epoch_; }

  // Nodes of built_from() that a health checker marked unhealthy. Pick() skips them, except
  // that when every untried node is down all are used (fail-open, reference §3.4).
  // `source`: what the marks were taken from (proxy::PickerTable keeps the health snapshot
  // here, to compare with the upstream's current one); Build() clears both.
  void set_down(const TriedSet& down, std::shared_ptr<const void> source = nullptr) {
    down_ = down;
    down_source_ = std::move(source);
  }
  const TriedSet& down() const { return down_; }
  const void* down_source() const { return down_source_.get(); }

  // Attempts picked and not yet reported (PickLease); the owner of a picker that tracks
  // attempts keeps it alive while this is not 0.
  uint32_t leases() const { return leases_; }

 protected:
  // Build()'s own part: set_ is the new set (never null), down_ is empty. `previous` is the
  // set of the build before (null on the first), alive for the call.
  virtual void Rebuild(const NodeSet* previous) = 0;

  NodeSetConstSharedPtr set_;
  TriedSet down_;
  std::shared_ptr<const void> down_source_;

 private:
  friend class PickLease;
  const BalancerType type_;
  uint64_t epoch_ = 0;
  uint32_t leases_ = 0;
};

// One attempt in flight for a picker that tracks attempts: made by Take() right after the
// pick, ended exactly once by End() (the attempt failed, or the request is over). Worker
// scope, no allocation. While a lease is open its picker counts it (Picker::leases()), so
// whoever owns pickers must keep one with open leases alive (proxy::PickerTable retires it
// instead of destroying it). A lease taken under an earlier epoch (the picker was rebuilt
// meanwhile) is ended without a report: its index means nothing to the new build.
class PickLease {
 public:
  PickLease() = default;
  PickLease(const PickLease&) = delete;
  PickLease& operator=(const PickLease&) = delete;

  // Opens a lease for `index`, just picked by `picker` (a picker that tracks attempts), at
  // `now_ms`. Ends the lease already open, if any, as not final.
  void Take(Picker* picker, uint32_t index, uint64_t now_ms) {
    if (picker_ != nullptr) End(now_ms, /*final=*/false);
    picker_ = picker;
    epoch_ = picker->epoch();
    index_ = index;
    start_ms_ = now_ms;
    ++picker->leases_;
  }
  // Ends the open lease (none: nothing). Returns its picker, whose leases() dropped by one
  // (null when none was open), so that its owner may free a retired picker.
  Picker* End(uint64_t now_ms, bool final) {
    Picker* picker = picker_;
    if (picker == nullptr) return nullptr;
    picker_ = nullptr;
    --picker->leases_;
    if (picker->epoch_ == epoch_) {
      picker->OnAttemptEnd(index_, now_ms, now_ms > start_ms_ ? now_ms - start_ms_ : 0, final);
    }
    return picker;
  }
  bool open() const { return picker_ != nullptr; }

 private:
  Picker* picker_ = nullptr;
  uint64_t epoch_ = 0;
  uint64_t start_ms_ = 0;
  uint32_t index_ = 0;
};

// Worker, off the request path: a new, unbuilt picker of `type`.
std::unique_ptr<Picker> NewPicker(BalancerType type);

// Builds (off the request path): the indexes of `nodes`, highest priority first, in index
// order within a priority (the order APISIX's priority balancer walks its groups in).
std::vector<uint32_t> IndexesByPriority(const NodeList& nodes);

// Worker, rare path: a stateless choice in `set` for a request whose pinned set is no longer
// the one its worker's picker is built from (the set changed between two attempts of one
// request). The first untried node of the highest priority group, preferring weight > 0, or
// kNone. O(nodes), no allocation.
uint32_t PickUntried(const NodeSet& set, const TriedSet& tried);

}  // namespace turnpike::upstream
