// PickerTable: one worker's balancer pickers, by Upstream::slot of the snapshot it serves
// (worker scope; not thread-safe).
//
// A picker is built from the node set its upstream's NodeSetSlot holds, and rebuilt only
// when that set's pointer changes: a discovery answer or DNS change rebuilds the pickers of
// the upstreams it touched, nothing else, and no route, chain or router is rebuilt. A new
// snapshot carries pickers over for the node sets it still uses (same pointer) with the same
// balancer type, so balancer state (round robin's turn, least_conn's counts, ewma's
// latencies) survives reloads that do not touch an upstream's nodes or type. A chash picker
// builds nothing: it takes the rings that came with the set, built once off the workers and
// shared by all of them (upstream/chash.h).
//
// Upstreams with health checks (Upstream::health): a picker also carries the unhealthy nodes
// of the health snapshot it was marked from (Picker::set_down), refreshed when the
// upstream's snapshot pointer changes (one more atomic load and compare per request, only
// for those upstreams).
//
// Pickers that track attempts (least_conn, ewma) hear about every attempt they picked
// through its PickLease (EndAttempt): a picker dropped by a reload while some of its leases
// are open is kept aside (retired) until the last one ends, so that no count is ever applied
// to a freed or a different picker.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "proxy/snapshot.h"
#include "upstream/balancer.h"

namespace turnpike::proxy {

class PickerTable {
 public:
  // Worker, on a new snapshot (off the request path). Pickers built from a set that an
  // upstream of `snapshot` currently holds are kept; the others are dropped.
  void Reset(const Snapshot& snapshot);

  // Hot path. The current node set of `up`, for the request to pin (the returned pointer is
  // the one refcount a request pays for its nodes). One atomic load and a pointer compare;
  // when the slot's set changed (or on the upstream's first request) its picker is rebuilt
  // first, which may allocate (O(nodes) for round robin, least_conn and ewma; O(1) for chash,
  // whose rings come with the set). `up` may belong to an older snapshot than the last Reset()
  // one (a request that pinned its snapshot before a reload and reached its upstream after
  // it: its body was read first, or a plugin paused it): its set then comes straight from
  // its slot, and no picker of the current snapshot is touched.
  upstream::NodeSetConstSharedPtr CurrentNodes(const Upstream& up);

  // Hot path. A node of `pinned` (what CurrentNodes returned for this request) not in
  // `*request.tried`, or upstream::Picker::kNone. A single-node set needs no picker (the node,
  // unless tried). Otherwise uses the upstream's picker when it is still built from `pinned`,
  // opening `lease` when that picker tracks attempts (the caller ends it with EndAttempt);
  // otherwise (the set changed between two attempts of the request, or `up` is of an older
  // snapshot) a plain scan of `pinned` (upstream::PickUntried). No allocation. `used`, when
  // given, is set to the picker that picked (null for a single node or a scan).
  uint32_t PickNode(const Upstream& up, const upstream::NodeSet& pinned,
                    const upstream::PickRequest& request, upstream::PickLease* lease,
                    const upstream::Picker** used = nullptr);

  // Hot path. Ends `lease` if open (see upstream::PickLease::End): the attempt it stands for
  // ended at `now_ms`; `final` for the request's last attempt. Frees the lease's picker if a
  // reload retired it and this was its last open lease.
  void EndAttempt(upstream::PickLease* lease, uint64_t now_ms, bool final) {
    upstream::Picker* picker = lease->End(now_ms, final);
    if (picker != nullptr && picker->leases() == 0 && !retired_.empty()) FreeRetired(picker);
  }

  // Tests: pickers dropped by a reload and kept for their open leases.
  size_t retired() const { return retired_.size(); }

  // Pickers built so far (tests: a rebuild happens only on a pointer change).
  uint64_t builds() const { return builds_; }
  // Tests: the picker of `up` (an upstream of the last Reset() snapshot), null before its
  // first request.
  const upstream::Picker* picker(const Upstream& up) const {
    return Current(up) ? pickers_[up.slot].get() : nullptr;
  }

 private:
  // Is `up` the upstream in its slot of the last Reset() snapshot?
  bool Current(const Upstream& up) const {
    return up.slot < upstreams_.size() && upstreams_[up.slot] == &up;
  }

  void FreeRetired(upstream::Picker* picker);
  // Marks the nodes of `up`'s picker that its health checker found unhealthy (on a new
  // health snapshot or a rebuilt picker; off the per-request path).
  void MarkDown(const Upstream& up, upstream::Picker* picker);

  std::vector<std::unique_ptr<upstream::Picker>> pickers_;  // null until first use
  // Dropped by Reset() with leases open; freed when their last lease ends.
  std::vector<std::unique_ptr<upstream::Picker>> retired_;
  // The upstream of each slot. A request pins its snapshot, so an older snapshot's upstream
  // it asks about is alive and never at the address of a current one.
  std::vector<const Upstream*> upstreams_;
  uint64_t builds_ = 0;
  upstream::TriedSet down_scratch_;
};

}  // namespace turnpike::proxy
