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
// A Picker (upstream/balancer.h): Build() runs when a worker first sees a NodeSet pointer,
// Pick() per attempt. One worker; not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "upstream/balancer.h"
#include "upstream/node_set.h"

namespace turnpike::upstream {

// One consistent-hash ring: resty.chash's points for a list of members, and the lookup.
// Built off the request path, then read-only.
class HashRing {
 public:
  struct Member {
    std::string_view id;  // what the member's points derive from (ChashPicker::RingId)
    uint32_t node;        // what a lookup returns for its points
    uint64_t points;      // how many points it gets
  };

  // Replaces the ring with the points of `members`. O(points) (a radix sort).
  void Build(const std::vector<Member>& members);

  // The first point at or after `hash`, wrapping around to point 0. REQUIRES: size() > 0.
  // An index lookup and a scan of about four consecutive hashes, whatever the size.
  uint32_t Find(uint32_t hash) const {
    const uint32_t bucket = static_cast<uint32_t>(uint64_t{hash} >> shift_);
    uint32_t i = index_[bucket];
    const uint32_t end = index_[bucket + 1];
    while (i < end && hashes_[i] < hash) ++i;
    return i == hashes_.size() ? 0 : i;
  }
  uint32_t node(uint32_t point) const { return nodes_[point]; }
  uint32_t hash(uint32_t point) const { return hashes_[point]; }
  uint32_t size() const { return static_cast<uint32_t>(hashes_.size()); }
  uint32_t members() const { return members_; }

 private:
  std::vector<uint32_t> hashes_;  // sorted ascending
  std::vector<uint32_t> nodes_;   // the member node of each point
  // index_[b]: the first point whose hash is >= b << shift_; index_.back() == size().
  std::vector<uint32_t> index_;
  uint32_t shift_ = 31;
  uint32_t members_ = 0;
};

class ChashPicker final : public Picker {
 public:
  static constexpr uint32_t kPointsPerWeight = 160;
  // A cap on the points of one ring: 8.4 million, room for 10k nodes of weights up to 5
  // (about 9 bytes a point with the index, per worker and upstream). Weights like 1:1000000
  // in one group would otherwise ask for 160 million points. Beyond the cap every node's share
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
  size_t points() const { return rings_.empty() ? 0 : rings_[0].size(); }

  // The id resty.chash hashes for `node`: APISIX's "host:port" with every ':' turned into a
  // NUL, the host being the node's address (IPv6 in brackets).
  static std::string RingId(const Node& node);

 private:
  // Build(): O(points), points = 160 x weights / gcd per group.
  void Rebuild() override;
  uint32_t PickAvoiding(uint32_t hash, const TriedSet& avoid);

  std::vector<HashRing> rings_;        // by priority, highest first
  std::vector<uint32_t> ring_of_;      // ring of each node index (UINT32_MAX: none)
  std::vector<uint32_t> zero_weight_;  // weight-0 nodes, highest priority first
  TriedSet avoid_;                     // tried + down (capacity reused)
};

}  // namespace turnpike::upstream
