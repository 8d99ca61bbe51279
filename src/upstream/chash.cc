#include "upstream/chash.h"

#include <algorithm>
#include <bit>
#include <memory>
#include <numeric>

#include "base/courtesy.h"
#include "upstream/crc32.h"

namespace turnpike::upstream {
namespace {

thread_local uint64_t ring_builds = 0;

// Calls f(position, hash, node) for every point of `members`, position being the point's
// rank in member order (member 0's points first, each member's in chain order). A point's
// CRC depends on the previous point of its member, so a lone chain waits on its table
// lookups; four members run side by side to overlap them.
template <typename F>
void ForEachPoint(const std::vector<HashRing::Member>& members, F&& f) {
  auto seed = [](const HashRing::Member& m) {
    return Crc32Update(kCrc32Init, reinterpret_cast<const unsigned char*>(m.id.data()),
                       m.id.size());
  };
  // Points [from, to) of one member, `prev` being point from - 1's hash (0 for the first).
  auto chain = [&f](uint64_t start, uint32_t crc, uint32_t node, uint32_t prev, uint64_t from,
                    uint64_t to) {
    for (uint64_t i = from; i < to; ++i) {
      prev = Crc32Final(Crc32UpdateWord(crc, prev));
      f(start + i, prev, node);
    }
  };
  uint64_t start = 0;
  size_t m = 0;
  for (; m + 4 <= members.size(); m += 4) {
    const HashRing::Member* g = &members[m];
    const uint32_t crc[4] = {seed(g[0]), seed(g[1]), seed(g[2]), seed(g[3])};
    const uint64_t at[4] = {start, start + g[0].points, start + g[0].points + g[1].points,
                            start + g[0].points + g[1].points + g[2].points};
    uint32_t prev[4] = {0, 0, 0, 0};
    const uint64_t common =
        std::min(std::min(g[0].points, g[1].points), std::min(g[2].points, g[3].points));
    for (uint64_t i = 0; i < common; ++i) {
      for (int k = 0; k < 4; ++k) {
        prev[k] = Crc32Final(Crc32UpdateWord(crc[k], prev[k]));
        f(at[k] + i, prev[k], g[k].node);
      }
    }
    for (int k = 0; k < 4; ++k) chain(at[k], crc[k], g[k].node, prev[k], common, g[k].points);
    start = at[3] + g[3].points;
    base::CourtesyPoint();
  }
  for (; m < members.size(); ++m) {
    chain(start, seed(members[m]), members[m].node, 0, 0, members[m].points);
    start += members[m].points;
    base::CourtesyPoint();
  }
}

// Calls f(begin, end) over [0, n) in chunks of 256, with a courtesy point after each
// (base/courtesy.h: a thread that opted in, like the control thread, yields every 100 us
// or so; the others pay a thread-local load per chunk). A 10k-node ring's build is 120 ms.
template <typename F>
void InChunks(uint32_t n, F&& f) {
  for (uint32_t begin = 0; begin < n; begin += 256) {
    f(begin, std::min(n, begin + 256));
    base::CourtesyPoint();
  }
}

// One stable counting-sort pass of `n` points (hash << 32 | node) on the digit
// (hash >> shift) & mask; `starts` holds each digit's first position and is advanced past it.
void ScatterPass(const uint64_t* from, uint64_t* to, uint32_t n, uint32_t shift, uint32_t mask,
                 uint32_t* starts) {
  InChunks(n, [=](uint32_t begin, uint32_t end) {
    for (uint32_t i = begin; i < end; ++i) {
      to[starts[(static_cast<uint32_t>(from[i] >> 32) >> shift) & mask]++] = from[i];
    }
  });
}

// counts[d] becomes the sum of counts before d.
void PrefixSums(uint32_t* counts, uint32_t size) {
  uint32_t sum = 0;
  for (uint32_t d = 0; d < size; ++d) {
    const uint32_t c = counts[d];
    counts[d] = sum;
    sum += c;
  }
}

// The ring of one priority group: 160 points per weight unit after dividing the weights by
// their gcd, capped at ChashPicker::kMaxPoints.
void BuildGroupRing(const NodeList& nodes, const std::vector<uint32_t>& group, HashRing* ring) {
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
  const std::string_view host = node.ip_text.empty() ? node.host.view() : node.ip_text.view();
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
  uint32_t max_node = 0;
  for (const Member& m : members) {
    total += m.points;
    max_node = std::max(max_node, m.node);
  }
  const auto n = static_cast<uint32_t>(total);
  size_ = n;
  members_ = static_cast<uint32_t>(members.size());

  // About four points per bucket: a lookup reads one index entry and scans a few
  // consecutive points.
  const int bits = std::clamp(static_cast<int>(std::bit_width(n)) - 3, 1, 24);
  shift_ = 32 - static_cast<uint32_t>(bits);
  narrow_ = shift_ <= 16 && max_node <= 0xffffu;
  const uint32_t buckets = 1u << bits;

  // The points as hash << 32 | node, sorted on the hash; equal hashes in member order, which
  // is ascending node index in ChashRings. Small rings: std::sort on the whole integer.
  // Others: a stable LSD radix sort, three passes of 11 bits (2048 counters: a pass's
  // destinations stay in cache); its last pass writes a wide ring's own points.
  narrow_points_ = {};
  wide_points_ = {};
  std::unique_ptr<uint64_t[]> scratch;  // a narrow ring's sorted points, until packed
  uint64_t* sorted = nullptr;
  if (!narrow_) {
    wide_points_.resize(n);
    sorted = wide_points_.data();
  }
  if (n < 1024) {
    if (narrow_) {
      scratch.reset(new uint64_t[n]);
      sorted = scratch.get();
    }
    ForEachPoint(members, [sorted](uint64_t at, uint32_t hash, uint32_t node) {
      sorted[at] = uint64_t{hash} << 32 | node;
    });
    std::sort(sorted, sorted + n);  // equal hashes by node: member order in ChashRings
  } else {
    constexpr uint32_t kPasses = 3;
    constexpr uint32_t kDigitBits = (32 + kPasses - 1) / kPasses;
    constexpr uint32_t kDigits = 1u << kDigitBits;
    std::vector<uint32_t> counts(kPasses * kDigits, 0);
    uint32_t* count = counts.data();
    // Not value-initialized: every slot is written.
    std::unique_ptr<uint64_t[]> first(new uint64_t[n]);
    scratch.reset(new uint64_t[n]);
    uint64_t* from = first.get();
    uint64_t* to = scratch.get();
    ForEachPoint(members, [from](uint64_t at, uint32_t hash, uint32_t node) {
      from[at] = uint64_t{hash} << 32 | node;
    });
    InChunks(n, [=](uint32_t begin, uint32_t end) {
      for (uint32_t i = begin; i < end; ++i) {
        const auto hash = static_cast<uint32_t>(from[i] >> 32);
        for (uint32_t p = 0; p < kPasses; ++p) {
          ++count[p * kDigits + ((hash >> (p * kDigitBits)) & (kDigits - 1))];
        }
      }
    });
    for (uint32_t p = 0; p < kPasses; ++p) PrefixSums(count + p * kDigits, kDigits);
    for (uint32_t p = 0; p + 1 < kPasses; ++p) {
      ScatterPass(from, to, n, p * kDigitBits, kDigits - 1, count + p * kDigits);
      std::swap(from, to);
    }
    // The last pass: into the ring's own points (wide), or the free buffer (narrow).
    if (narrow_) sorted = to;
    ScatterPass(from, sorted, n, (kPasses - 1) * kDigitBits, kDigits - 1,
                count + (kPasses - 1) * kDigits);
  }

  // The index, by a scan of the sorted points; a narrow ring's points on the way.
  // (Locals, not members: the stores through `index` could alias them.)
  index_.assign(buckets + 1, n);
  uint32_t* index = index_.data();
  uint32_t next = 0;  // the first bucket whose start is not known yet
  const uint32_t shift = shift_;
  if (narrow_) {
    narrow_points_.resize(n);
    uint32_t* out = narrow_points_.data();
    InChunks(n, [&next, index, shift, sorted, out](uint32_t begin, uint32_t end) {
      for (uint32_t i = begin; i < end; ++i) {
        const auto hash = static_cast<uint32_t>(sorted[i] >> 32);
        for (const uint32_t bucket = hash >> shift; next <= bucket; ++next) index[next] = i;
        // A narrow point keeps the hash's low 16 bits; its bucket (16 bits or more) the rest.
        out[i] = (hash & 0xffffu) << 16 | static_cast<uint32_t>(sorted[i]);
      }
    });
  } else {
    InChunks(n, [&next, index, shift, sorted](uint32_t begin, uint32_t end) {
      for (uint32_t i = begin; i < end; ++i) {
        const auto hash = static_cast<uint32_t>(sorted[i] >> 32);
        for (const uint32_t bucket = hash >> shift; next <= bucket; ++next) index[next] = i;
      }
    });
  }
}

uint32_t HashRing::hash(uint32_t point) const {
  if (!narrow_) return static_cast<uint32_t>(wide_points_[point] >> 32);
  // The last bucket starting at or before the point is the point's.
  const auto it = std::upper_bound(index_.begin(), index_.end(), point);
  const auto bucket = static_cast<uint32_t>(it - index_.begin() - 1);
  return bucket << shift_ | narrow_points_[point] >> 16;
}

size_t HashRing::memory() const {
  return narrow_points_.capacity() * sizeof(uint32_t) + wide_points_.capacity() * sizeof(uint64_t) +
         index_.capacity() * sizeof(uint32_t);
}

ChashRingsConstSharedPtr ChashRings::Build(const NodeList& nodes) {
  ++ring_builds;
  auto out = std::make_shared<ChashRings>();
  out->ring_of_.assign(nodes.size(), kNoRing);
  if (nodes.empty()) return out;

  const std::vector<uint32_t> order = IndexesByPriority(nodes);
  std::vector<uint32_t> members;
  for (size_t i = 0; i < order.size(); ++i) {
    const Node& node = nodes[order[i]];
    if (node.weight > 0) {
      members.push_back(order[i]);
    } else {
      out->zero_weight_.push_back(order[i]);
    }
    const bool group_ends = i + 1 == order.size() || nodes[order[i + 1]].priority != node.priority;
    if (group_ends && !members.empty()) {
      out->rings_.emplace_back();
      BuildGroupRing(nodes, members, &out->rings_.back());
      for (uint32_t m : members) out->ring_of_[m] = static_cast<uint32_t>(out->rings_.size() - 1);
      members.clear();
    }
  }
  return out;
}

uint64_t ChashRings::builds_on_this_thread() { return ring_builds; }

size_t ChashRings::memory() const {
  size_t bytes = 0;
  for (const HashRing& ring : rings_) bytes += ring.memory();
  return bytes;
}

void ChashPicker::Rebuild(const NodeSet* /*previous*/) {
  own_.reset();
  rings_ = set_->chash.get();
  if (rings_ == nullptr && !set_->nodes.empty()) {
    own_ = ChashRings::Build(set_->nodes);
    rings_ = own_.get();
  }
}

uint32_t ChashPicker::PickAvoiding(uint32_t hash, const TriedSet& avoid) {
  const std::vector<HashRing>& rings = rings_->rings();
  for (uint32_t r = 0; r < rings.size(); ++r) {
    const HashRing& ring = rings[r];
    if (avoid.count() == 0) return ring.node(ring.Find(hash));  // a first attempt
    uint32_t avoided = 0;
    avoid.ForEach([&](uint32_t i) {
      if (rings_->ring_of(i) == r) ++avoided;
    });
    if (avoided >= ring.members()) continue;  // all tried: the next priority group
    // Some node of this ring is not avoided, so the walk ends within one turn.
    uint32_t p = ring.Find(hash);
    while (avoid.Contains(ring.node(p))) {
      if (++p == ring.size()) p = 0;
    }
    return ring.node(p);
  }
  for (uint32_t i : rings_->zero_weight()) {
    if (!avoid.Contains(i)) return i;
  }
  return kNone;
}

uint32_t ChashPicker::Pick(const PickRequest& request) {
  if (rings_ == nullptr) return kNone;
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
