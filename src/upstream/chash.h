// Consistent hashing over a NodeSet (`type: chash`, reference §3.3), as APISIX's
// balancer/chash.lua on lua-resty-chash.
//
// The ring: each node of weight w gets 160 * w / g points, g the gcd of the weights of its
// priority group (so 100:100 costs what 1:1 does). A node's points are resty.chash's: the
// CRC-32 of its id ("ip\0port", IPv6 in brackets: APISIX's "host:port" with ':' turned into
// NULs) followed by the previous point's four bytes (little-endian; 0 for the first). A key
// goes to the first point at or after its CRC-32, wrapping around. So for the same key,
// nodes and weights Turnpike picks the node APISIX picks, whenever APISIX's weights are
// already divided by their gcd (weights of 1, the default, always are; with 100:100 APISIX
// builds a ring 100 times larger, whose choice differs). Points with equal hashes (rare: two
// 32-bit CRCs) are ordered by node index, where resty.chash's order is its table's.
//
// Priority groups (APISIX's priority balancer): one ring per group, highest priority first;
// a group is used until all its nodes were tried. Retries walk the ring from the key's point
// to the next point whose node was not tried (APISIX's picker:next from the last index
// visits the same points in the same order). Nodes of weight 0 have no points and are
// picked only when no untried node with a weight is left, highest group first. Node health
// (set_down) never changes the ring: down nodes are skipped like tried ones (fail-open when
// nothing else is left).
//
// The rings depend on the nodes alone (addresses, weights, priorities; not on hash_on or the
// key), so they are built once per NodeSet, off the workers, and shared (ChashRings below):
// the producer that publishes a set into the slot of a chash upstream attaches its rings
// first (NodeSetSlot::chash(); discovery::Directory on the control thread, the snapshot build
// for IP-literal nodes), so a worker that sees the new set pointer finds them ready and its
// ChashPicker::Build() only takes a pointer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "upstream/balancer.h"
#include "upstream/node_set.h"

namespace turnpike::upstream {

// One consistent-hash ring: resty.chash's points for a list of members, and the lookup.
// Built off the request path, then read-only (any thread).
//
// Layout: the points sorted by (hash, node), in buckets of the hash's top bits (about four
// points a bucket) with an index of the first point of each. A point is one integer,
// hash << 32 | node (8 bytes), or, in rings of 2^18 points or more whose nodes are all below
// 65536, the hash's low 16 bits << 16 | node (4 bytes): there the bucket (16 bits or more)
// gives the rest of the hash. About 4.9 bytes a point with the index instead of 9.
class HashRing {
 public:
  struct Member {
    std::string_view id;  // what the member's points derive from (ChashPicker::RingId)
    uint32_t node;        // what a lookup returns for its points
    uint64_t points;      // how many points it gets
  };

  // Replaces the ring with the points of `members`. O(points): the points (four members'
  // CRC chains interleaved), a radix sort on their hashes (three passes), then the index.
  // Allocates about 16 bytes a point for the time of the build.
  void Build(const std::vector<Member>& members);

  // The first point at or after `hash`, wrapping around to point 0. REQUIRES: size() > 0.
  // An index lookup and a scan of about four consecutive points, whatever the size.
  uint32_t Find(uint32_t hash) const {
    const uint32_t bucket = hash >> shift_;
    uint32_t i = index_[bucket];
    const uint32_t end = index_[bucket + 1];
    if (narrow_) {
      const uint32_t key = (hash & 0xffffu) << 16;  // below every point of `hash` or more
      while (i < end && narrow_points_[i] < key) ++i;
    } else {
      const uint64_t key = uint64_t{hash} << 32;
      while (i < end && wide_points_[i] < key) ++i;
    }
    return i == size_ ? 0 : i;
  }
  uint32_t node(uint32_t point) const {
    return narrow_ ? narrow_points_[point] & 0xffffu : static_cast<uint32_t>(wide_points_[point]);
  }
  // Tests: the hash of a point (O(log buckets) in a narrow ring).
  uint32_t hash(uint32_t point) const;
  uint32_t size() const { return size_; }
  uint32_t members() const { return members_; }
  // Bytes held (points and index).
  size_t memory() const;
  // Tests: whether points are 4 bytes (see the layout above).
  bool narrow() const { return narrow_; }

 private:
  std::vector<uint32_t> narrow_points_;  // narrow_: low16(hash) << 16 | node, sorted
  std::vector<uint64_t> wide_points_;    // otherwise: hash << 32 | node, sorted
  // index_[b]: the first point whose hash is >= b << shift_; index_.back() == size().
  std::vector<uint32_t> index_ = {0, 0, 0};
  uint32_t shift_ = 31;
  uint32_t size_ = 0;
  uint32_t members_ = 0;
  bool narrow_ = false;
};

// The rings of one node set: one HashRing per priority group (highest first), each node's
// ring, and the weight-0 nodes. Immutable once built; shared by every worker's ChashPicker
// through NodeSet::chash.
class ChashRings {
 public:
  // Any thread, off the request path (the control thread, the reload job). O(points),
  // points = 160 x weights / gcd per priority group (capped, ChashPicker::kMaxPoints): about
  // 120 ms for 10k nodes of weights 1 to 5 (docs/benchmarks.md), with courtesy points
  // (base/courtesy.h). Counted per thread (builds_on_this_thread).
  static std::shared_ptr<const ChashRings> Build(const NodeList& nodes);

  // Rings built by the calling thread so far (tests: a worker builds none).
  static uint64_t builds_on_this_thread();

  static constexpr uint32_t kNoRing = UINT32_MAX;
  const std::vector<HashRing>& rings() const { return rings_; }
  // The ring of node index `node`, or kNoRing (weight 0, or out of range).
  uint32_t ring_of(uint32_t node) const {
    return node < ring_of_.size() ? ring_of_[node] : kNoRing;
  }
  const std::vector<uint32_t>& zero_weight() const { return zero_weight_; }
  // Bytes held by the rings (points and indexes; the small per-node tables not counted).
  size_t memory() const;

 private:
  std::vector<HashRing> rings_;        // by priority, highest first
  std::vector<uint32_t> ring_of_;      // ring of each node index (kNoRing: none)
  std::vector<uint32_t> zero_weight_;  // weight-0 nodes, highest priority first
};

using ChashRingsConstSharedPtr = std::shared_ptr<const ChashRings>;

// A Picker (upstream/balancer.h): Build() when a worker first sees a NodeSet pointer takes
// the set's shared rings (NodeSet::chash), O(1); only a set published without them (a
// producer that did not attach any; unit tests) gets rings built by the picker itself, on
// the calling thread. Pick() per attempt. One worker; not thread-safe.
class ChashPicker final : public Picker {
 public:
  static constexpr uint32_t kPointsPerWeight = 160;
  // A cap on the points of one ring: 8.4 million, room for 10k nodes of weights up to 5
  // (about 4.9 bytes a point with the index, once per node set). Weights like 1:1000000 in
  // one group would otherwise ask for 160 million points. Beyond the cap every node's share
  // is scaled down in proportion (at least one point each), and the ring no longer matches
  // APISIX's.
  static constexpr uint64_t kMaxPoints = 1u << 23;

  ChashPicker() : Picker(BalancerType::kChash) {}
  using Picker::Pick;

  // Worker, hot path. The node for `request.hash` (HashKey::Hash of the request): the first
  // point at or after it in the highest-priority ring with an untried node, skipping points
  // of nodes in `*request.tried` (and down ones, unless nothing else is left). kNone when
  // every node was tried.
  //
  // Cost: a first attempt is HashRing::Find, whatever the ring size. A retry also counts the
  // tried nodes of each ring (O(tried)) and walks past the points of tried nodes: about
  // nodes / untried points on average. No allocation.
  uint32_t Pick(const PickRequest& request) override;

  // Tests and benchmarks: the points of the highest-priority ring.
  size_t points() const {
    return rings_ == nullptr || rings_->rings().empty() ? 0 : rings_->rings()[0].size();
  }
  // Tests: the rings in use (the set's own when it has them), null before Build() or for an
  // empty set.
  const ChashRings* rings() const { return rings_; }

  // The id resty.chash hashes for `node`: APISIX's "host:port" with every ':' turned into a
  // NUL, the host being the node's address (IPv6 in brackets).
  static std::string RingId(const Node& node);

 private:
  // O(1) with the set's rings; otherwise builds them (O(points)).
  void Rebuild(const NodeSet* previous) override;
  uint32_t PickAvoiding(uint32_t hash, const TriedSet& avoid);

  const ChashRings* rings_ = nullptr;  // set_->chash, or own_
  ChashRingsConstSharedPtr own_;       // built here for a set without rings
  TriedSet avoid_;                     // tried + down (capacity reused)
};

}  // namespace turnpike::upstream
