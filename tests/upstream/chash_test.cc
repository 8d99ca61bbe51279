// Consistent hashing (upstream/chash.h): resty.chash's ring (checked against lua-resty-balancer's
// own test figures), points per weight after the gcd, stability when nodes come and go, retries
// walking the ring, priority groups, weight 0 and down nodes; a naive ring (sorted vector,
// lower_bound) as the oracle.
#include "upstream/chash.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "upstream/crc32.h"
#include "upstream/picker_test_util.h"

namespace turnpike::upstream {
namespace {

using testing::Set;
constexpr uint32_t kNone = Picker::kNone;

uint32_t PickFor(ChashPicker& p, std::string_view key, const TriedSet& tried = TriedSet()) {
  PickRequest r;
  r.tried = &tried;
  r.hash = Crc32(key);
  return p.Pick(r);
}

// The documented algorithm written out directly: every point, sorted, and the first point
// at or after the key's hash (wrapping), found by std::lower_bound.
class NaiveRing {
 public:
  NaiveRing(const NodeSet& set, const std::vector<uint32_t>& members, uint64_t gcd) {
    for (uint32_t m : members) {
      const std::string id = ChashPicker::RingId(set.nodes[m]);
      uint32_t prev = 0;
      for (uint64_t i = 0; i < set.nodes[m].weight / gcd * 160; ++i) {
        std::string bytes = id;
        for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<char>(prev >> (8 * b)));
        prev = Crc32(bytes);
        points_.push_back({prev, m});
      }
    }
    std::sort(points_.begin(), points_.end());
  }
  // The node of the first point at or after `hash` whose node is not in `tried`.
  uint32_t Find(uint32_t hash, const TriedSet& tried) const {
    auto it =
        std::lower_bound(points_.begin(), points_.end(), std::pair<uint32_t, uint32_t>{hash, 0});
    for (size_t step = 0; step < points_.size(); ++step) {
      if (it == points_.end()) it = points_.begin();
      if (!tried.Contains(it->second)) return it->second;
      ++it;
    }
    return kNone;
  }
  size_t size() const { return points_.size(); }

 private:
  std::vector<std::pair<uint32_t, uint32_t>> points_;
};

TEST(Crc32Test, KnownValuesAndContinuation) {
  EXPECT_EQ(Crc32("123456789"), 0xcbf43926u);
  EXPECT_EQ(Crc32(""), 0u);
  const std::string a = "hello ", b = "world";
  uint32_t state =
      Crc32Update(kCrc32Init, reinterpret_cast<const unsigned char*>(a.data()), a.size());
  state = Crc32Update(state, reinterpret_cast<const unsigned char*>(b.data()), b.size());
  EXPECT_EQ(Crc32Final(state), Crc32("hello world"));
  // The word step is the byte loop over the word's little-endian bytes.
  for (uint32_t word : {0u, 1u, 0xdeadbeefu, 0xffffffffu, 0x80000000u}) {
    const unsigned char bytes[4] = {
        static_cast<unsigned char>(word), static_cast<unsigned char>(word >> 8),
        static_cast<unsigned char>(word >> 16), static_cast<unsigned char>(word >> 24)};
    EXPECT_EQ(Crc32UpdateWord(0x12345678u, word), Crc32Update(0x12345678u, bytes, 4)) << word;
  }
}

// lua-resty-balancer's t/chash.t, TEST 1: servers server1=10, server2=2, server3=1, keys 1 to
// 100000 (as strings): its expected counts and point number. Same ring, same lookups.
TEST(HashRingTest, MatchesRestyChash) {
  HashRing ring;
  ring.Build({{"server1", 0, 10 * 160}, {"server2", 1, 2 * 160}, {"server3", 2, 1 * 160}});
  EXPECT_EQ(ring.size(), 2080u);
  std::vector<int> counts(3, 0);
  for (int i = 1; i <= 100000; ++i) ++counts[ring.node(ring.Find(Crc32(std::to_string(i))))];
  EXPECT_EQ(counts, (std::vector<int>{77075, 14743, 8182}));
}

TEST(HashRingTest, FindIsTheFirstPointAtOrAfterTheHashWrapping) {
  HashRing ring;
  ring.Build({{"a", 0, 5000}, {"b", 1, 3000}});
  for (uint32_t p = 1; p < ring.size(); ++p) ASSERT_LE(ring.hash(p - 1), ring.hash(p));
  EXPECT_EQ(ring.Find(0), 0u);
  EXPECT_EQ(ring.Find(ring.hash(0)), 0u);
  EXPECT_EQ(ring.Find(ring.hash(ring.size() - 1)), ring.size() - 1);
  if (ring.hash(ring.size() - 1) != UINT32_MAX) {
    EXPECT_EQ(ring.Find(ring.hash(ring.size() - 1) + 1), 0u) << "past the last point: wraps";
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) {
    const uint32_t h = static_cast<uint32_t>(rng());
    const uint32_t p = ring.Find(h);
    if (h > ring.hash(ring.size() - 1)) {
      ASSERT_EQ(p, 0u);
    } else {
      ASSERT_GE(ring.hash(p), h);
      ASSERT_TRUE(p == 0 || ring.hash(p - 1) < h);
    }
  }
}

TEST(ChashTest, RingIdIsApisixsServerWithNuls) {
  Node v4;
  v4.host = "backend.local";
  v4.ip_text = "127.0.0.1";
  v4.port = 8080;
  EXPECT_EQ(ChashPicker::RingId(v4), std::string("127.0.0.1\0"
                                                 "8080",
                                                 14));
  Node v6;
  v6.ip_text = "::1";
  v6.port = 80;
  EXPECT_EQ(ChashPicker::RingId(v6), std::string("[\0\0"
                                                 "1]\0"
                                                 "80",
                                                 8));
}

TEST(ChashTest, PointsPerWeightUnitAfterTheGcd) {
  ChashPicker p;
  p.Build(Set({1}));
  EXPECT_EQ(p.points(), 160u);
  p.Build(Set({100, 100}));
  EXPECT_EQ(p.points(), 320u) << "100:100 costs what 1:1 does";
  p.Build(Set({2, 4, 6}));
  EXPECT_EQ(p.points(), 960u);
  p.Build(Set({3, 5}, {0, 1}));
  EXPECT_EQ(p.points(), 160u) << "one ring per priority group, each with its own gcd";
  p.Build(Set({1, 1000000}));
  EXPECT_LE(p.points(), ChashPicker::kMaxPoints + 2) << "pathological weights are capped";
}

TEST(ChashTest, SameKeySameNodeAndSharesFollowWeights) {
  ChashPicker p;
  p.Build(Set({1, 2, 3}));
  std::vector<int> counts(3, 0);
  for (int i = 0; i < 60000; ++i) {
    const std::string key = "user-" + std::to_string(i);
    const uint32_t node = PickFor(p, key);
    ASSERT_LT(node, 3u);
    ASSERT_EQ(PickFor(p, key), node) << "sticky";
    ++counts[node];
  }
  // 160 points per weight unit: each share is within ~20% of its weight's.
  EXPECT_NEAR(counts[0], 10000, 2000);
  EXPECT_NEAR(counts[1], 20000, 4000);
  EXPECT_NEAR(counts[2], 30000, 6000);
}

TEST(ChashTest, AgreesWithANaiveRingOnFirstPicksAndRetries) {
  auto set = Set({1, 3, 2, 5, 1, 4, 2});
  ChashPicker p;
  p.Build(set);
  NaiveRing naive(*set, {0, 1, 2, 3, 4, 5, 6}, 1);
  ASSERT_EQ(p.points(), naive.size());
  std::mt19937 rng(11);
  for (int i = 0; i < 5000; ++i) {
    const std::string key = std::to_string(rng());
    TriedSet tried;
    for (int attempt = 0; attempt < 7; ++attempt) {
      const uint32_t expected = naive.Find(Crc32(key), tried);
      const uint32_t got = PickFor(p, key, tried);
      ASSERT_EQ(got, expected) << "key " << key << " attempt " << attempt;
      tried.Add(got);
    }
    ASSERT_EQ(PickFor(p, key, tried), kNone) << "every node tried";
  }
}

// Consistent hashing's point: a node coming or going moves only the keys it takes or had.
TEST(ChashTest, OnlyAboutOneNthOfTheKeysMoveWhenANodeComesOrGoes) {
  std::vector<int> weights(10, 1);
  ChashPicker before;
  before.Build(Set(weights));
  weights.push_back(1);
  ChashPicker after;
  after.Build(Set(weights));  // node 10 added; nodes 0-9 keep their ids, so their points
  constexpr int kKeys = 40000;
  int moved = 0;
  for (int i = 0; i < kKeys; ++i) {
    const std::string key = "k" + std::to_string(i);
    const uint32_t a = PickFor(before, key);
    const uint32_t b = PickFor(after, key);
    if (a != b) {
      ++moved;
      ASSERT_EQ(b, 10u) << "a key that moves goes to the new node";
    }
  }
  EXPECT_NEAR(moved, kKeys / 11, kKeys / 11 * 0.35);

  // Removing node 3 (the set's order shifts, so indexes map by address): only its keys move.
  auto full = Set(std::vector<int>(10, 1));
  auto less = std::make_shared<NodeSet>(*full);
  std::vector<Node> kept(full->nodes.begin(), full->nodes.end());
  kept.erase(kept.begin() + 3);
  less->nodes = NodeList(std::move(kept));
  ChashPicker without;
  without.Build(less);
  int from_removed = 0;
  for (int i = 0; i < kKeys; ++i) {
    const std::string key = "k" + std::to_string(i);
    const uint32_t a = PickFor(before, key);
    const uint32_t b = PickFor(without, key);
    if (a == 3) {
      ++from_removed;
      continue;
    }
    ASSERT_EQ(full->nodes[a].ip_text, less->nodes[b].ip_text) << "key " << key << " moved";
  }
  EXPECT_NEAR(from_removed, kKeys / 10, kKeys / 10 * 0.35);
}

TEST(ChashTest, PriorityGroupsInOrderOneRingEach) {
  // Nodes 0, 1 in priority 5; nodes 2, 3 in priority 0.
  auto set = Set({1, 1, 1, 1}, {5, 5, 0, 0});
  ChashPicker p;
  p.Build(set);
  NaiveRing high(*set, {0, 1}, 1);
  NaiveRing low(*set, {2, 3}, 1);
  for (int i = 0; i < 2000; ++i) {
    const std::string key = "key" + std::to_string(i);
    TriedSet tried;
    const uint32_t first = PickFor(p, key, tried);
    ASSERT_EQ(first, high.Find(Crc32(key), tried));
    tried.Add(first);
    const uint32_t second = PickFor(p, key, tried);
    ASSERT_EQ(second, high.Find(Crc32(key), tried));
    tried.Add(second);
    const uint32_t third = PickFor(p, key, tried);
    ASSERT_EQ(third, low.Find(Crc32(key), tried)) << "the lower group's own ring";
    tried.Add(third);
    ASSERT_EQ(PickFor(p, key, tried), low.Find(Crc32(key), tried));
  }
}

TEST(ChashTest, WeightZeroOnlyWhenNothingElseIsLeft) {
  ChashPicker p;
  p.Build(Set({0, 1, 1}));
  std::map<uint32_t, int> seen;
  for (int i = 0; i < 1000; ++i) ++seen[PickFor(p, std::to_string(i))];
  EXPECT_EQ(seen.count(0), 0u);
  TriedSet tried;
  tried.Add(1);
  tried.Add(2);
  EXPECT_EQ(PickFor(p, "x", tried), 0u);
  tried.Add(0);
  EXPECT_EQ(PickFor(p, "x", tried), kNone);

  ChashPicker only_zero;
  only_zero.Build(Set({0, 0}));
  EXPECT_EQ(PickFor(only_zero, "x"), 0u);
  ChashPicker empty;
  EXPECT_EQ(PickFor(empty, "x"), kNone) << "never built";
  empty.Build(Set({}));
  EXPECT_EQ(PickFor(empty, "x"), kNone);
}

TEST(ChashTest, DownNodesAreSkippedButKeepTheRing) {
  auto set = Set({1, 1, 1});
  ChashPicker p;
  p.Build(set);
  NaiveRing naive(*set, {0, 1, 2}, 1);
  TriedSet down;
  down.Add(1);
  p.set_down(down);
  for (int i = 0; i < 1000; ++i) {
    const std::string key = std::to_string(i);
    // A key whose node is down goes where a retry would: the ring is unchanged.
    ASSERT_EQ(PickFor(p, key), naive.Find(Crc32(key), down));
  }
  down.Add(0);
  down.Add(2);
  p.set_down(down);
  EXPECT_NE(PickFor(p, "x"), kNone) << "all down: fail-open";
}

TEST(ChashTest, LargeNodeIndexesInTheTriedSet) {
  auto set = Set(std::vector<int>(300, 1));
  ChashPicker p;
  p.Build(set);
  std::vector<uint32_t> order;
  for (uint32_t i = 0; i < 300; ++i) order.push_back(i);
  NaiveRing naive(*set, order, 1);
  TriedSet tried;
  for (int attempt = 0; attempt < 300; ++attempt) {
    const uint32_t got = PickFor(p, "user-42", tried);
    ASSERT_EQ(got, naive.Find(Crc32("user-42"), tried));
    tried.Add(got);
  }
  EXPECT_EQ(PickFor(p, "user-42", tried), kNone);
}

// Rings of 2^18 points or more keep 4 bytes a point (the low 16 bits of the hash beside the
// node; the bucket gives the rest): the same points, found the same way, as the naive ring.
TEST(HashRingTest, NarrowRingsAgreeWithTheNaiveRing) {
  auto set = Set(std::vector<int>(2000, 1));  // 320k points
  std::vector<uint32_t> members(2000);
  for (uint32_t i = 0; i < 2000; ++i) members[i] = i;
  NaiveRing naive(*set, members, 1);
  ChashPicker p;
  p.Build(set);
  const HashRing& ring = p.rings()->rings()[0];
  ASSERT_TRUE(ring.narrow());
  ASSERT_EQ(ring.size(), naive.size());
  EXPECT_LT(ring.memory(), size_t{ring.size()} * 6) << "about 4.9 bytes a point";
  for (uint32_t q = 1; q < ring.size(); ++q) ASSERT_LE(ring.hash(q - 1), ring.hash(q));
  std::mt19937 rng(3);
  TriedSet none;
  for (int i = 0; i < 50000; ++i) {
    const uint32_t h = i < 3 ? std::vector<uint32_t>{0, UINT32_MAX, ring.hash(7)}[i]
                             : static_cast<uint32_t>(rng());
    const uint32_t q = ring.Find(h);
    ASSERT_EQ(ring.node(q), naive.Find(h, none)) << h;
    ASSERT_TRUE(q == 0 ? h > ring.hash(ring.size() - 1) || h <= ring.hash(0)
                       : ring.hash(q - 1) < h && ring.hash(q) >= h)
        << h;
  }
  // Retries walk the narrow ring as the naive one.
  for (int i = 0; i < 200; ++i) {
    const std::string key = "k" + std::to_string(i);
    TriedSet tried;
    for (int attempt = 0; attempt < 4; ++attempt) {
      const uint32_t got = PickFor(p, key, tried);
      ASSERT_EQ(got, naive.Find(Crc32(key), tried));
      tried.Add(got);
    }
  }
}

// Node indexes of 65536 or more do not fit a narrow point: such a ring stays wide.
TEST(HashRingTest, NodesBeyond16BitsKeepWidePoints) {
  std::vector<std::string> ids;
  std::vector<HashRing::Member> members;
  for (uint32_t i = 0; i < 2000; ++i) ids.push_back("m" + std::to_string(i));
  for (uint32_t i = 0; i < 2000; ++i) members.push_back({ids[i], 70000 + i, 160});
  HashRing ring;
  ring.Build(members);
  EXPECT_FALSE(ring.narrow());
  EXPECT_EQ(ring.size(), 320000u);
  std::mt19937 rng(5);
  for (int i = 0; i < 1000; ++i) {
    const uint32_t q = ring.Find(static_cast<uint32_t>(rng()));
    ASSERT_GE(ring.node(q), 70000u);
    ASSERT_LT(ring.node(q), 72000u);
  }
}

// The rings come with the set (NodeSet::chash): pickers take them, build nothing, and pick as a
// picker with a ring of its own does.
TEST(ChashTest, PickersShareTheSetsRings) {
  auto set = std::make_shared<NodeSet>(*Set({1, 3, 2, 5}, {0, 0, 1, 1}));
  const uint64_t builds = ChashRings::builds_on_this_thread();
  set->chash = ChashRings::Build(set->nodes);
  EXPECT_EQ(ChashRings::builds_on_this_thread(), builds + 1);
  const NodeSetConstSharedPtr shared = set;
  ChashPicker one, two;
  one.Build(shared);
  two.Build(shared);
  EXPECT_EQ(ChashRings::builds_on_this_thread(), builds + 1) << "no picker built a ring";
  EXPECT_EQ(one.rings(), set->chash.get());
  EXPECT_EQ(two.rings(), set->chash.get());

  ChashPicker own;  // a set without rings: the picker builds them, on this thread
  own.Build(Set({1, 3, 2, 5}, {0, 0, 1, 1}));
  EXPECT_EQ(ChashRings::builds_on_this_thread(), builds + 2);
  EXPECT_NE(own.rings(), set->chash.get());
  for (int i = 0; i < 2000; ++i) {
    const std::string key = "user-" + std::to_string(i);
    TriedSet tried;
    for (int attempt = 0; attempt < 4; ++attempt) {
      const uint32_t got = PickFor(one, key, tried);
      ASSERT_EQ(got, PickFor(own, key, tried)) << key << " attempt " << attempt;
      tried.Add(got);
    }
  }

  ChashPicker empty;  // the empty set: nothing to build, nothing to pick
  empty.Build(std::make_shared<NodeSet>());
  EXPECT_EQ(ChashRings::builds_on_this_thread(), builds + 2);
  EXPECT_EQ(PickFor(empty, "x"), kNone);
}

}  // namespace
}  // namespace turnpike::upstream
