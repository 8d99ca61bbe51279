// least_conn (upstream/least_conn.h): the lowest (in flight + 1) / weight, turns among equals,
// attempts reported through PickLease, retries, priority groups, weight 0, down nodes.
#include "upstream/least_conn.h"

#include <gtest/gtest.h>

#include <vector>

#include "upstream/picker_test_util.h"

namespace turnpike::upstream {
namespace {

using testing::Set;
constexpr uint32_t kNone = Picker::kNone;

void End(LeastConnPicker& p, uint32_t index) { p.OnAttemptEnd(index, 0, 0, true); }

TEST(LeastConnTest, IdleNodesOfEqualWeightTakeTurns) {
  LeastConnPicker p;
  p.Build(Set({1, 1, 1}));
  std::vector<uint32_t> seq;
  for (int i = 0; i < 6; ++i) {
    const uint32_t n = p.Pick(TriedSet());
    seq.push_back(n);
    End(p, n);  // one request at a time: every node is idle at each pick
  }
  EXPECT_EQ(seq, (std::vector<uint32_t>{0, 1, 2, 0, 1, 2}));
}

TEST(LeastConnTest, InFlightCountsSplitByWeight) {
  LeastConnPicker p;
  p.Build(Set({3, 1}));
  std::vector<int> counts(2, 0);
  for (int i = 0; i < 400; ++i) ++counts[p.Pick(TriedSet())];  // none ends
  EXPECT_EQ(counts, (std::vector<int>{300, 100}));
  EXPECT_EQ(p.active(0), 300u);
  EXPECT_EQ(p.active(1), 100u);
}

TEST(LeastConnTest, TheIdleNodeWinsUntilLoadsMeet) {
  LeastConnPicker p;
  p.Build(Set({1, 1}));
  for (int i = 0; i < 10; ++i) {
    const uint32_t n = p.Pick(TriedSet());
    if (n == 1) End(p, 1);  // node 1 answers at once, node 0 is slow
  }
  // Node 0 holds one attempt forever; node 1's end at once: node 1 takes everything after.
  EXPECT_EQ(p.active(0), 1u);
  EXPECT_EQ(p.active(1), 0u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(p.Pick(TriedSet()), 1u);
    End(p, 1);
  }
  End(p, 0);
  EXPECT_EQ(p.active(0), 0u);
  End(p, 0);
  EXPECT_EQ(p.active(0), 0u) << "a stray end never goes below zero";
}

TEST(LeastConnTest, RetriesSkipTriedNodesAndCountToo) {
  LeastConnPicker p;
  p.Build(Set({1, 1, 1}));
  TriedSet tried;
  const uint32_t a = p.Pick(tried);
  tried.Add(a);
  const uint32_t b = p.Pick(tried);
  EXPECT_NE(b, a);
  tried.Add(b);
  const uint32_t c = p.Pick(tried);
  EXPECT_NE(c, a);
  EXPECT_NE(c, b);
  tried.Add(c);
  EXPECT_EQ(p.Pick(tried), kNone);
  EXPECT_EQ(p.active(a) + p.active(b) + p.active(c), 3u);
}

TEST(LeastConnTest, PriorityGroupsWeightZeroAndDownNodes) {
  LeastConnPicker p;
  p.Build(Set({1, 0, 1, 1}, {1, 1, 1, 0}));  // node 3 in the lower group, node 1 weight 0
  for (int i = 0; i < 10; ++i) {
    const uint32_t n = p.Pick(TriedSet());
    EXPECT_TRUE(n == 0 || n == 2) << n;  // the higher group, weight > 0, however loaded
  }
  TriedSet tried;
  tried.Add(0);
  tried.Add(2);
  EXPECT_EQ(p.Pick(tried), 3u) << "the lower group before weight 0";
  tried.Add(3);
  EXPECT_EQ(p.Pick(tried), 1u);
  tried.Add(1);
  EXPECT_EQ(p.Pick(tried), kNone);

  LeastConnPicker q;
  q.Build(Set({1, 1}));
  TriedSet down;
  down.Add(0);
  q.set_down(down);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(q.Pick(TriedSet()), 1u);
  down.Add(1);
  q.set_down(down);
  EXPECT_NE(q.Pick(TriedSet()), kNone) << "all down: fail-open";
}

TEST(LeastConnTest, LeasesReportOnceAndNotAcrossARebuild) {
  LeastConnPicker p;
  p.Build(Set({1, 1}));
  PickLease lease;
  const uint32_t n = p.Pick(TriedSet());
  lease.Take(&p, n, 100);
  EXPECT_EQ(p.leases(), 1u);
  EXPECT_EQ(p.active(n), 1u);
  EXPECT_EQ(lease.End(150, true), &p);
  EXPECT_EQ(p.active(n), 0u);
  EXPECT_EQ(p.leases(), 0u);
  EXPECT_EQ(lease.End(160, true), nullptr) << "ended once";

  lease.Take(&p, p.Pick(TriedSet()), 200);
  p.Build(Set({1, 1, 1}));  // new indexes: the old attempt means nothing to them
  const uint32_t fresh = p.Pick(TriedSet());
  EXPECT_EQ(p.active(fresh), 1u);
  EXPECT_EQ(lease.End(250, true), &p);
  EXPECT_EQ(p.active(fresh), 1u) << "an attempt of the previous build does not count";
  EXPECT_EQ(p.leases(), 0u);
}

TEST(LeastConnTest, ManyNodesHeapAgreesWithAScan) {
  std::vector<int> weights;
  for (int i = 0; i < 200; ++i) weights.push_back(1 + i % 7);
  LeastConnPicker p;
  p.Build(Set(weights));
  std::vector<uint32_t> active(weights.size(), 0);
  std::vector<uint32_t> in_flight;
  uint32_t seed = 1;
  for (int i = 0; i < 5000; ++i) {
    seed = seed * 1103515245 + 12345;
    if ((seed >> 16) % 3 == 0 && !in_flight.empty()) {  // end a random attempt
      const size_t k = (seed >> 8) % in_flight.size();
      End(p, in_flight[k]);
      --active[in_flight[k]];
      in_flight.erase(in_flight.begin() + static_cast<long>(k));
      continue;
    }
    const uint32_t n = p.Pick(TriedSet());
    // Its score is the lowest: (active + 1) / weight, compared without division.
    for (size_t j = 0; j < weights.size(); ++j) {
      ASSERT_LE((uint64_t{active[n]} + 1) * weights[j], (uint64_t{active[j]} + 1) * weights[n])
          << "pick " << i << ": node " << n << " over node " << j;
    }
    ++active[n];
    in_flight.push_back(n);
  }
}

}  // namespace
}  // namespace turnpike::upstream
