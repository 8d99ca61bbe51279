// ewma (upstream/ewma.h): APISIX's latency EWMA with its 10 s decay and two random choices;
// only a request's last attempt updates; retries, priority groups, weight 0, down nodes.
#include "upstream/ewma.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "upstream/picker_test_util.h"

namespace turnpike::upstream {
namespace {

using testing::Set;
constexpr uint32_t kNone = Picker::kNone;

uint32_t PickAt(EwmaPicker& p, uint64_t now_ms, const TriedSet& tried = TriedSet()) {
  PickRequest r;
  r.tried = &tried;
  r.now_ms = now_ms;
  return p.Pick(r);
}

TEST(EwmaTest, UnmeasuredNodesAreAllDrawn) {
  EwmaPicker p;
  p.Build(Set({1, 1, 1, 1}));
  std::vector<int> counts(4, 0);
  for (int i = 0; i < 4000; ++i) ++counts[PickAt(p, 1000)];
  for (int c : counts) EXPECT_GT(c, 500);
}

TEST(EwmaTest, TheSlowNodeLosesEveryDraw) {
  EwmaPicker p;
  p.Build(Set({1, 1, 1}));
  p.OnAttemptEnd(0, 1000, 2, true);
  p.OnAttemptEnd(1, 1000, 300, true);  // slow
  p.OnAttemptEnd(2, 1000, 3, true);
  std::vector<int> counts(3, 0);
  for (int i = 0; i < 3000; ++i) ++counts[PickAt(p, 1001)];
  // Two distinct nodes per draw: the slow one is always beaten.
  EXPECT_EQ(counts[1], 0);
  EXPECT_GT(counts[0], 1000) << "node 0 (2 ms) beats node 2 (3 ms) and node 1";
  EXPECT_GT(counts[2], 500) << "node 2 wins its draws against node 1";
}

TEST(EwmaTest, AveragesDecayWithTimeAsApisix) {
  EwmaPicker p;
  p.Build(Set({1, 1}));
  p.OnAttemptEnd(0, 5000, 100, true);
  EXPECT_DOUBLE_EQ(p.Score(0, 5000), 0.1) << "the first sample is the average";
  EXPECT_NEAR(p.Score(0, 15000), 0.1 * std::exp(-1.0), 1e-12) << "10 s idle: e^-1";
  p.OnAttemptEnd(0, 15000, 500, true);
  EXPECT_NEAR(p.Score(0, 15000), 0.1 * std::exp(-1.0) + 0.5 * (1 - std::exp(-1.0)), 1e-12);
  p.OnAttemptEnd(0, 15000, 2000, true);
  EXPECT_NEAR(p.Score(0, 15000), 0.1 * std::exp(-1.0) + 0.5 * (1 - std::exp(-1.0)), 1e-12)
      << "no time passed: APISIX's weight is 1, the sample counts for nothing";
  p.OnAttemptEnd(1, 15000, 900, false);
  EXPECT_EQ(p.Score(1, 15000), 0) << "a failed attempt before a retry does not count";
}

TEST(EwmaTest, RetriesPriorityWeightZeroAndDown) {
  EwmaPicker p;
  p.Build(Set({1, 1, 0, 1}, {1, 1, 1, 0}));
  for (int i = 0; i < 100; ++i) {
    const uint32_t n = PickAt(p, 0);
    ASSERT_TRUE(n == 0 || n == 1) << n;
  }
  TriedSet tried;
  tried.Add(0);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(PickAt(p, 0, tried), 1u);
  tried.Add(1);
  EXPECT_EQ(PickAt(p, 0, tried), 3u) << "the lower group before weight 0";
  tried.Add(3);
  EXPECT_EQ(PickAt(p, 0, tried), 2u);
  tried.Add(2);
  EXPECT_EQ(PickAt(p, 0, tried), kNone);

  EwmaPicker q;
  q.Build(Set({1, 1, 1}));
  TriedSet down;
  down.Add(1);
  q.set_down(down);
  for (int i = 0; i < 200; ++i) EXPECT_NE(PickAt(q, 0), 1u);
  down.Add(0);
  down.Add(2);
  q.set_down(down);
  EXPECT_NE(PickAt(q, 0), kNone) << "all down: fail-open";
}

TEST(EwmaTest, RetriesDrawTwoOfTheUntried) {
  EwmaPicker p;
  p.Build(Set({1, 1, 1, 1, 1}));
  p.OnAttemptEnd(2, 10, 1, true);    // fast
  p.OnAttemptEnd(3, 10, 500, true);  // slow
  p.OnAttemptEnd(4, 10, 500, true);  // slow
  TriedSet tried;
  tried.Add(0);
  tried.Add(1);
  // Untried: 2, 3, 4; any draw of two includes 2 or is {3, 4}.
  std::vector<int> counts(5, 0);
  for (int i = 0; i < 3000; ++i) ++counts[PickAt(p, 10, tried)];
  EXPECT_EQ(counts[0] + counts[1], 0);
  EXPECT_GT(counts[2], 1500);
  EXPECT_GT(counts[3] + counts[4], 0) << "the draw {3, 4} happens";
}

}  // namespace
}  // namespace turnpike::upstream
