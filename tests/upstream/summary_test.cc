// NodeSet::summary: every picker built from a summarized set (as producers publish them)
// picks exactly as one built from the same nodes read one by one, through rebuilds of uniform
// and mixed sets, first attempts, retries, down nodes and attempt reports.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "upstream/balancer.h"
#include "upstream/picker_test_util.h"

namespace turnpike::upstream {
namespace {

NodeSetConstSharedPtr Summarized(const std::vector<int>& weights,
                                 const std::vector<int>& priorities) {
  auto set = std::make_shared<NodeSet>(*testing::Set(weights, priorities));
  set->summary = SummarizeNodes(set->nodes);
  return set;
}

TEST(NodeSummaryTest, OnePriorityAndOneWeight) {
  EXPECT_TRUE(SummarizeNodes(NodeList{}).summarized);
  EXPECT_FALSE(SummarizeNodes(NodeList{}).uniform) << "nothing to pick from: the pickers' own case";
  const NodeSetConstSharedPtr same = testing::Set({3, 3, 3}, {2, 2, 2});
  NodeSummary s = SummarizeNodes(same->nodes);
  EXPECT_TRUE(s.summarized);
  EXPECT_TRUE(s.uniform);
  EXPECT_EQ(s.weight, 3);
  s = SummarizeNodes(testing::Set({0, 0})->nodes);
  EXPECT_TRUE(s.uniform);
  EXPECT_EQ(s.weight, 0);
  EXPECT_FALSE(SummarizeNodes(testing::Set({3, 4}, {2, 2})->nodes).uniform);
  EXPECT_FALSE(SummarizeNodes(testing::Set({3, 3}, {2, 1})->nodes).uniform);
  // Sorted: ascending by host text, then port; equal neighbours allowed.
  EXPECT_TRUE(SummarizeNodes(NodeList{}).sorted);
  EXPECT_TRUE(SummarizeNodes(testing::Set({1, 1, 1})->nodes).sorted);  // 10.0.0.0, .1, .2
  NodeList nodes = testing::Set({1, 1, 1, 1})->nodes;                  // 10.0.0.0 ... .3, port 80
  nodes.Mutable(0).port = 90;  // the host decides first: 10.0.0.0:90 before 10.0.0.1:80
  EXPECT_TRUE(SummarizeNodes(nodes).sorted);
  nodes.Mutable(2).host = nodes[1].host;  // 10.0.0.1:80 twice
  EXPECT_TRUE(SummarizeNodes(nodes).sorted);
  nodes.Mutable(1).port = 81;  // 10.0.0.1:81, then 10.0.0.1:80
  EXPECT_FALSE(SummarizeNodes(nodes).sorted);
  // Byte order, not numeric: 10.0.0.10 comes before 10.0.0.2.
  EXPECT_FALSE(SummarizeNodes(testing::Set(std::vector<int>(11, 1))->nodes).sorted);
  // Not part of the set's value.
  NodeSet summarized = *same;
  summarized.summary = SummarizeNodes(summarized.nodes);
  EXPECT_TRUE(SameNodes(*same, summarized));
}

TEST(NodeSummaryTest, PickersPickAsFromTheNodes) {
  for (BalancerType type :
       {BalancerType::kRoundRobin, BalancerType::kLeastConn, BalancerType::kEwma}) {
    SCOPED_TRACE(std::string(BalancerTypeName(type)));
    std::mt19937 rng(11);
    std::unique_ptr<Picker> summarized = NewPicker(type);
    std::unique_ptr<Picker> plain = NewPicker(type);
    uint64_t now_ms = 0;
    for (int build = 0; build < 200; ++build) {
      const size_t n = 1 + rng() % (build % 3 == 0 ? 150 : 6);
      std::vector<int> weights(n, static_cast<int>(rng() % 4));  // 0: all of weight 0
      std::vector<int> priorities(n, static_cast<int>(rng() % 3));
      if (build % 5 == 4) {  // mixed: both read the nodes
        for (int& w : weights) w = static_cast<int>(rng() % 3);
        for (int& p : priorities) p = static_cast<int>(rng() % 2);
      }
      summarized->Build(Summarized(weights, priorities));
      plain->Build(testing::Set(weights, priorities));
      if (build % 7 == 6) {
        TriedSet down;
        for (uint32_t i = 0; i < n; ++i) {
          if (rng() % 3 == 0) down.Add(i);
        }
        summarized->set_down(down);
        plain->set_down(down);
      }
      std::vector<uint32_t> in_flight;
      for (int pick = 0; pick < 40; ++pick) {
        now_ms += rng() % 50;
        if (!in_flight.empty() && rng() % 3 == 0) {
          const uint32_t index = in_flight.back();
          in_flight.pop_back();
          const uint64_t elapsed = rng() % 300;
          summarized->OnAttemptEnd(index, now_ms, elapsed, true);
          plain->OnAttemptEnd(index, now_ms, elapsed, true);
          continue;
        }
        TriedSet tried;
        if (rng() % 4 == 0) {
          for (uint32_t i = 0; i < n; ++i) {
            if (rng() % 2 == 0) tried.Add(i);
          }
        }
        PickRequest request{&tried, 0, now_ms};
        const uint32_t a = summarized->Pick(request);
        const uint32_t b = plain->Pick(request);
        ASSERT_EQ(a, b) << "build " << build << " pick " << pick << " nodes " << n;
        if (a != Picker::kNone) in_flight.push_back(a);
      }
    }
  }
}

}  // namespace
}  // namespace turnpike::upstream
