#include "upstream/chash.h"

#include <algorithm>
#include <array>
#include <bit>
#include <memory>
#include <numeric>

#include "upstream/crc32.h"

namespace turnpike::upstream {
namespace {

constexpr uint32_t kNoRing = UINT32_MAX;

// Sorts ring points (hash << 32 | node) by hash, keeping equal hashes in their input order
// (ascending node index): an LSD radix sort on the hash's 32 bits, three passes of 11 bits.
// A 10k-node ring has 1.6 million points; this is ~10x faster than std::sort there.
void SortPoints(std::vector<uint64_t>* points) {
  if (points->size() < 1024) {
    std::sort(points->begin(), points->end());  // the low half (node) breaks ties the same way
    return;
  }
  constexpr int kBits = 11;
  constexpr size_t kBuckets = size_t{1} << kBits;
  const size_t n = points->size();
  // Not zero-filled: the first pass writes every slot.
  std::unique_ptr<uint64_t[]> tmp(new uint64_t[n]);
  uint64_t* from = points->data();
  uint64_t* to = tmp.get();
  for (int shift = 32; shift < 64; shift += kBits) {
    std::array<size_t, kBuckets> count{};
    for (size_t i = 0; i < n; ++i) ++count[(from[i] >> shift) & (kBuckets - 1)];
    size_t sum = 0;
    for (size_t& c : count) {
      const size_t k = c;
      c = sum;
      sum += k;
    }
    for (size_t i = 0; i < n; ++i) to[count[(from[i] >> shift) & (kBuckets - 1)]++] = from[i];
    std::swap(from, to);
  }
  if (from != points->data()) std::copy(from, from + n, points->data());  // an odd pass count
}

// The ring of one priority group: 160 points per weight unit after dividing the weights by
// their gcd, capped at ChashPicker::kMaxPoints.
void BuildGroupRing(const std::vector<Node>& nodes, const std::vector<uint32_t>& group,
                    HashRing* ring) {
  uint64_t gcd = 0;
  for (uint32_t m : group) gcd = std::gcd(gcd, static_cast<uint64_t>(nodes[m].weight));
  uint64_t total = 0;
  for (uint32_t m : group) total += nodes[m].weight / gcd * ChashPicker::kPointsPerWeight;
  std::vector<std::string> ids;
  ids.reserve(group.size());
  std::vector<HashRing::Member> members;
  members.reserve(group.size());
  for (uint32_t m : group) {
    uint64_t points = nodes[m].weight / gcd * ChashPicker::kPointsPerWeight;
    if (total > ChashPicker::kMaxPoints) {
      points = std::max<uint64_t>(1, points * ChashPicker::kMaxPoints / total);
    }
    ids.push_back(ChashPicker::RingId(nodes[m]));
    members.push_back(HashRing::Member{ids.back(), m, points});
  }
  ring->Build(members);
}

}  // namespace

std::string ChashPicker::RingId(const Node& node) {
  const std::string& host = node.ip_text.empty() ? node.host : node.ip_text;
  std::string id;
  id.reserve(host.size() + 8);
  const bool v6 = host.find(':') != std::string::npos;
  if (v6) id.push_back('[');
  id.append(host);
  if (v6) id.push_back(']');
  id.push_back(':');
  id.append(std::to_string(node.port));
  std::replace(id.begin(), id.end(), ':', '\0');
  return id;
}

void HashRing::Build(const std::vector<Member>& members) {
  uint64_t total = 0;
  for (const Member& m : members) total += m.points;
  std::vector<uint64_t> points(total);
  uint64_t* out = points.data();
  for (const Member& m : members) {
    const uint32_t base =
        Crc32Update(kCrc32Init, reinterpret_cast<const unsigned char*>(m.id.data()), m.id.size());
    // Point i is the CRC-32 of the id followed by point i - 1's four bytes (0 for the first).
    uint32_t prev = 0;
    for (uint64_t i = 0; i < m.points; ++i) {
      prev = Crc32Final(Crc32UpdateWord(base, prev));
      *out++ = uint64_t{prev} << 32 | m.node;
    }
  }
  SortPoints(&points);

  const auto n = static_cast<uint32_t>(points.size());
  hashes_.resize(n);
  nodes_.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    hashes_[i] = static_cast<uint32_t>(points[i] >> 32);
    nodes_[i] = static_cast<uint32_t>(points[i]);
  }
  members_ = static_cast<uint32_t>(members.size());

  // About four points per index bucket: a lookup reads one index entry and scans a few
  // consecutive hashes.
  const int bits = std::clamp(static_cast<int>(std::bit_width(n)) - 3, 1, 24);
  shift_ = 32 - static_cast<uint32_t>(bits);
  const uint32_t buckets = 1u << bits;
  index_.assign(buckets + 1, n);
  uint32_t p = 0;
  for (uint32_t b = 0; b < buckets; ++b) {
    const uint64_t low = uint64_t{b} << shift_;
    while (p < n && hashes_[p] < low) ++p;
    index_[b] = p;
  }
}

void ChashPicker::Rebuild() {
  rings_.clear();
  zero_weight_.clear();
  const std::vector<Node>& nodes = set_->nodes;
  ring_of_.assign(nodes.size(), kNoRing);
  if (nodes.empty()) return;

  std::vector<uint32_t> order(nodes.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&nodes](uint32_t a, uint32_t b) {
    return nodes[a].priority > nodes[b].priority;
  });
  std::vector<uint32_t> members;
  for (size_t i = 0; i < order.size(); ++i) {
    const Node& node = nodes[order[i]];
    if (node.weight > 0) {
      members.push_back(order[i]);
    } else {
      zero_weight_.push_back(order[i]);
    }
    const bool group_ends = i + 1 == order.size() || nodes[order[i + 1]].priority != node.priority;
    if (group_ends && !members.empty()) {
      rings_.emplace_back();
      BuildGroupRing(nodes, members, &rings_.back());
      for (uint32_t m : members) ring_of_[m] = static_cast<uint32_t>(rings_.size() - 1);
      members.clear();
    }
  }
}

uint32_t ChashPicker::PickAvoiding(uint32_t hash, const TriedSet& avoid) {
  for (uint32_t r = 0; r < rings_.size(); ++r) {
    const HashRing& ring = rings_[r];
    if (avoid.count() == 0) return ring.node(ring.Find(hash));  // a first attempt
    uint32_t avoided = 0;
    avoid.ForEach([&](uint32_t i) {
      if (i < ring_of_.size() && ring_of_[i] == r) ++avoided;
    });
    if (avoided >= ring.members()) continue;  // all tried: the next priority group
    // Some node of this ring is not avoided, so the walk ends within one turn.
    uint32_t p = ring.Find(hash);
    while (avoid.Contains(ring.node(p))) {
      if (++p == ring.size()) p = 0;
    }
    return ring.node(p);
  }
  for (uint32_t i : zero_weight_) {
    if (!avoid.Contains(i)) return i;
  }
  return kNone;
}

uint32_t ChashPicker::Pick(const PickRequest& request) {
  if (set_ == nullptr) return kNone;
  const TriedSet& tried = *request.tried;
  if (down_.count() != 0) {
    avoid_.Clear();
    avoid_.Merge(tried);
    avoid_.Merge(down_);
    const uint32_t index = PickAvoiding(request.hash, avoid_);
    if (index != kNone) return index;
  }
  return PickAvoiding(request.hash, tried);
}

}  // namespace turnpike::upstream
