#include "upstream/round_robin.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace turnpike::upstream {
namespace {

constexpr uint32_t kNone = RoundRobinPicker::kNone;

// Whether Set() summarizes its sets as producers do (NodeSet::summary): RoundRobinTest runs
// every case both ways, since a uniform set's build reads the summary instead of the nodes.
bool summarize_sets = false;

// weights[i] / priorities[i] describe node i.
NodeSetConstSharedPtr Set(const std::vector<int>& weights, const std::vector<int>& priorities = {},
                          bool summarize = summarize_sets) {
  auto set = std::make_shared<NodeSet>();
  for (size_t i = 0; i < weights.size(); ++i) {
    Node n;
    n.host = "10.0.0." + std::to_string(i);
    n.port = 80;
    n.weight = weights[i];
    n.priority = priorities.empty() ? 0 : priorities[i];
    set->nodes.push_back(std::move(n));
  }
  if (summarize) set->summary = SummarizeNodes(set->nodes);
  return set;
}

class RoundRobinTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { summarize_sets = GetParam(); }
  void TearDown() override { summarize_sets = false; }
};

INSTANTIATE_TEST_SUITE_P(Sets, RoundRobinTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Summarized" : "NodeByNode";
                         });

std::vector<int> Counts(RoundRobinPicker& picker, size_t nodes, int picks) {
  std::vector<int> counts(nodes, 0);
  TriedSet none;
  for (int i = 0; i < picks; ++i) {
    const uint32_t pick = picker.Pick(none);
    EXPECT_LT(pick, nodes);
    if (pick < nodes) ++counts[pick];
  }
  return counts;
}

std::vector<uint32_t> Sequence(RoundRobinPicker& picker, int picks) {
  std::vector<uint32_t> out;
  TriedSet none;
  for (int i = 0; i < picks; ++i) out.push_back(picker.Pick(none));
  return out;
}

// nginx's algorithm written out directly, for comparison.
std::vector<uint32_t> ReferenceSequence(const std::vector<int>& weights, int picks) {
  std::vector<int64_t> current(weights.size(), 0);
  std::vector<uint32_t> out;
  for (int p = 0; p < picks; ++p) {
    int64_t total = 0;
    int best = -1;
    for (size_t i = 0; i < weights.size(); ++i) {
      if (weights[i] <= 0) continue;
      current[i] += weights[i];
      total += weights[i];
      if (best < 0 || current[i] > current[best]) best = static_cast<int>(i);
    }
    current[best] -= total;
    out.push_back(static_cast<uint32_t>(best));
  }
  return out;
}

TEST(TriedSetTest, SmallAndLargeIndexes) {
  TriedSet t;
  EXPECT_EQ(t.count(), 0u);
  EXPECT_FALSE(t.Contains(0));
  t.Add(0);
  t.Add(63);
  t.Add(64);
  t.Add(1000);
  t.Add(63);    // again
  t.Add(1000);  // again
  EXPECT_EQ(t.count(), 4u);
  EXPECT_TRUE(t.Contains(0));
  EXPECT_TRUE(t.Contains(63));
  EXPECT_TRUE(t.Contains(64));
  EXPECT_TRUE(t.Contains(1000));
  EXPECT_FALSE(t.Contains(1));
  EXPECT_FALSE(t.Contains(65));
  EXPECT_FALSE(t.Contains(999));
  t.Clear();
  EXPECT_EQ(t.count(), 0u);
  EXPECT_FALSE(t.Contains(0));
  EXPECT_FALSE(t.Contains(64));
  EXPECT_FALSE(t.Contains(1000));
  t.Add(70);
  EXPECT_TRUE(t.Contains(70));
  EXPECT_EQ(t.count(), 1u);
}

TEST_P(RoundRobinTest, Weights321) {
  RoundRobinPicker p;
  p.Build(Set({3, 2, 1}));
  EXPECT_EQ(Counts(p, 3, 12), (std::vector<int>{6, 4, 2}));
}

TEST_P(RoundRobinTest, Weights301) {
  RoundRobinPicker p;
  p.Build(Set({3, 0, 1}));
  EXPECT_EQ(Counts(p, 3, 12), (std::vector<int>{9, 0, 3}));
}

TEST_P(RoundRobinTest, Weights11) {
  RoundRobinPicker p;
  p.Build(Set({1, 1}));
  EXPECT_EQ(Counts(p, 2, 12), (std::vector<int>{6, 6}));
  EXPECT_EQ(Sequence(p, 4), (std::vector<uint32_t>{0, 1, 0, 1}));
}

TEST_P(RoundRobinTest, SmoothLikeNginx) {
  // nginx's documented example: weights 5, 1, 1 give a a b a c a a.
  RoundRobinPicker p;
  p.Build(Set({5, 1, 1}));
  EXPECT_EQ(Sequence(p, 14), (std::vector<uint32_t>{0, 0, 1, 0, 2, 0, 0, 0, 0, 1, 0, 2, 0, 0}));
}

TEST_P(RoundRobinTest, FollowsNginxSequenceExactly) {
  // Repeated weights (the picker groups nodes by weight), ties between groups, large weights.
  const std::vector<std::vector<int>> cases = {
      {7, 3, 3, 1, 0, 12}, {2, 1, 2, 1, 2}, {1, 2, 1, 2}, {40000, 30001, 5}, {4, 4, 4, 4}};
  for (const auto& weights : cases) {
    RoundRobinPicker p;
    p.Build(Set(weights));
    EXPECT_EQ(Sequence(p, 5000), ReferenceSequence(weights, 5000));
  }
  std::mt19937 rng(1);
  for (int round = 0; round < 200; ++round) {
    std::vector<int> weights(1 + rng() % 20);
    for (int& w : weights) w = static_cast<int>(rng() % 7);
    weights[rng() % weights.size()] = 1 + static_cast<int>(rng() % 6);  // at least one > 0
    RoundRobinPicker p;
    p.Build(Set(weights));
    ASSERT_EQ(Sequence(p, 500), ReferenceSequence(weights, 500)) << "round " << round;
  }
}

TEST_P(RoundRobinTest, HighestPriorityGroupOnly) {
  RoundRobinPicker p;
  p.Build(Set({1, 5, 1, 1}, {0, 0, 10, 10}));
  EXPECT_EQ(Counts(p, 4, 10), (std::vector<int>{0, 0, 5, 5}));
}

TEST_P(RoundRobinTest, PriorityFallbackOnRetry) {
  RoundRobinPicker p;
  p.Build(Set({1, 1, 1, 1}, {0, 5, 5, -3}));
  TriedSet tried;
  std::vector<uint32_t> order;
  for (uint32_t pick = p.Pick(tried); pick != kNone; pick = p.Pick(tried)) {
    order.push_back(pick);
    tried.Add(pick);
  }
  ASSERT_EQ(order.size(), 4u);
  // The priority-5 nodes first (in either order), then priority 0, then -3.
  EXPECT_TRUE((order[0] == 1 && order[1] == 2) || (order[0] == 2 && order[1] == 1));
  EXPECT_EQ(order[2], 0u);
  EXPECT_EQ(order[3], 3u);
  EXPECT_EQ(p.Pick(tried), kNone);
}

TEST_P(RoundRobinTest, TriedNodesAreSkipped) {
  RoundRobinPicker p;
  p.Build(Set({5, 1, 1}));
  TriedSet tried;
  tried.Add(0);
  for (int i = 0; i < 20; ++i) {
    const uint32_t pick = p.Pick(tried);
    EXPECT_TRUE(pick == 1 || pick == 2) << pick;
  }
  tried.Add(1);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(p.Pick(tried), 2u);
  tried.Add(2);
  EXPECT_EQ(p.Pick(tried), kNone);
}

TEST_P(RoundRobinTest, RetriesShareTheWeights) {
  // Among untried nodes the weights still apply: with node 0 tried, 2:1 between 1 and 2.
  RoundRobinPicker p;
  p.Build(Set({9, 2, 1}));
  TriedSet tried;
  tried.Add(0);
  std::map<uint32_t, int> counts;
  for (int i = 0; i < 30; ++i) ++counts[p.Pick(tried)];
  EXPECT_EQ(counts[1], 20);
  EXPECT_EQ(counts[2], 10);
}

TEST_P(RoundRobinTest, ZeroWeightOnlyWhenNothingElseIsLeft) {
  RoundRobinPicker p;
  p.Build(Set({0, 2, 0, 1}));
  TriedSet tried;
  for (int i = 0; i < 30; ++i) {
    const uint32_t pick = p.Pick(tried);
    EXPECT_TRUE(pick == 1 || pick == 3) << pick;
  }
  tried.Add(1);
  tried.Add(3);
  const uint32_t a = p.Pick(tried);
  EXPECT_TRUE(a == 0 || a == 2) << a;
  tried.Add(a);
  EXPECT_EQ(p.Pick(tried), a == 0 ? 2u : 0u);
  tried.Add(a == 0 ? 2 : 0);
  EXPECT_EQ(p.Pick(tried), kNone);
}

TEST_P(RoundRobinTest, ZeroWeightNodesAloneAreUsedInTurn) {
  RoundRobinPicker p;
  p.Build(Set({0, 0}));
  EXPECT_EQ(Counts(p, 2, 10), (std::vector<int>{5, 5}));
  p.Build(Set({0}));
  EXPECT_EQ(Counts(p, 1, 3), (std::vector<int>{3}));
}

TEST_P(RoundRobinTest, ZeroWeightComesAfterLowerPriorityGroups) {
  // Node 0 (priority 10, weight 0) is a last resort, after the priority-0 node.
  RoundRobinPicker p;
  p.Build(Set({0, 3, 1}, {10, 10, 0}));
  TriedSet tried;
  EXPECT_EQ(p.Pick(tried), 1u);
  tried.Add(1);
  EXPECT_EQ(p.Pick(tried), 2u);
  tried.Add(2);
  EXPECT_EQ(p.Pick(tried), 0u);
  tried.Add(0);
  EXPECT_EQ(p.Pick(tried), kNone);
}

TEST_P(RoundRobinTest, EmptySet) {
  RoundRobinPicker p;
  TriedSet tried;
  EXPECT_EQ(p.Pick(tried), kNone);  // never built
  EXPECT_EQ(p.built_from(), nullptr);
  auto empty = std::make_shared<NodeSet>();
  p.Build(empty);
  EXPECT_EQ(p.built_from(), empty.get());
  EXPECT_EQ(p.Pick(tried), kNone);
  p.Build(nullptr);
  EXPECT_EQ(p.Pick(tried), kNone);
}

TEST_P(RoundRobinTest, MoreThan64Nodes) {
  constexpr size_t kNodes = 100;
  RoundRobinPicker p;
  p.Build(Set(std::vector<int>(kNodes, 1)));
  EXPECT_EQ(Counts(p, kNodes, 300), std::vector<int>(kNodes, 3));

  TriedSet tried;
  for (uint32_t i = 0; i < kNodes; ++i) {
    if (i != 77) tried.Add(i);
  }
  EXPECT_EQ(p.Pick(tried), 77u);
  tried.Add(77);
  EXPECT_EQ(p.Pick(tried), kNone);

  // Walk every node once, as retries would.
  tried.Clear();
  std::vector<bool> seen(kNodes, false);
  for (size_t i = 0; i < kNodes; ++i) {
    const uint32_t pick = p.Pick(tried);
    ASSERT_LT(pick, kNodes);
    EXPECT_FALSE(seen[pick]);
    seen[pick] = true;
    tried.Add(pick);
  }
  EXPECT_EQ(p.Pick(tried), kNone);
}

TEST_P(RoundRobinTest, RebuildOnANewSet) {
  RoundRobinPicker p;
  auto first = Set({1, 1});
  p.Build(first);
  EXPECT_EQ(p.built_from(), first.get());
  Counts(p, 2, 3);
  auto second = Set({1, 3, 0}, {0, 0, 1});
  p.Build(second);
  EXPECT_EQ(p.built_from(), second.get());
  // Fresh state: the same sequence as a new picker on the new set.
  RoundRobinPicker fresh;
  fresh.Build(second);
  EXPECT_EQ(Sequence(p, 12), Sequence(fresh, 12));
  auto counts = Counts(p, 3, 8);
  EXPECT_EQ(counts, (std::vector<int>{2, 6, 0}));
  // Shrinking the set never yields an index from the old one.
  p.Build(Set({4}));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(p.Pick(TriedSet()), 0u);
}

// Ahead(d) (a prefetch hint) against the picks that follow: at every step, the d-th next
// first-attempt pick, for sets of one weight class (zero-weight and lower-priority nodes
// aside); kNone where the next picks cannot be told in O(1).
TEST_P(RoundRobinTest, AheadTellsTheNextPicksOfOneWeightClass) {
  const std::vector<std::pair<std::vector<int>, std::vector<int>>> sets = {
      {{1, 1, 1, 1, 1}, {}},
      {{2, 0, 2, 2}, {}},              // class: nodes 0, 2, 3
      {{5, 5, 7}, {1, 1, 0}},          // the highest group: nodes 0, 1
      {std::vector<int>(70, 3), {}}};  // more than 64 nodes, wrapping past the end
  for (const auto& [weights, priorities] : sets) {
    RoundRobinPicker p;
    p.Build(Set(weights, priorities));
    constexpr int kSteps = 150;
    std::vector<std::array<uint32_t, 3>> told;
    std::vector<uint32_t> picked;
    TriedSet none;
    for (int k = 0; k < kSteps; ++k) {
      told.push_back({p.Ahead(1), p.Ahead(2), p.Ahead(3)});
      picked.push_back(p.Pick(none));
    }
    for (int k = 0; k + 3 <= kSteps; ++k) {
      for (uint32_t d = 1; d <= 3; ++d) {
        ASSERT_EQ(told[k][d - 1], picked[k + d - 1])
            << "set of " << weights.size() << ", step " << k << ", " << d << " ahead";
      }
    }
    EXPECT_EQ(p.Ahead(0), kNone);
  }

  RoundRobinPicker classes;
  classes.Build(Set({3, 2, 1}));
  EXPECT_EQ(classes.Ahead(1), kNone) << "smooth weights over several classes";

  RoundRobinPicker down;
  down.Build(Set({1, 1, 1}));
  TriedSet marks;
  marks.Add(1);
  down.set_down(marks);
  EXPECT_EQ(down.Ahead(1), kNone) << "with nodes down, picks walk the retry groups";

  RoundRobinPicker empty;
  EXPECT_EQ(empty.Ahead(1), kNone);
  empty.Build(Set({}));
  EXPECT_EQ(empty.Ahead(1), kNone);
}

// `n` nodes of weight 1, node i named by `id(i)` (port 80), summarized as the suite says.
NodeSetConstSharedPtr Named(size_t n, const std::function<std::string(size_t)>& id) {
  auto set = std::make_shared<NodeSet>();
  for (size_t i = 0; i < n; ++i) {
    Node node;
    node.host = id(i);
    node.port = 80;
    set->nodes.push_back(std::move(node));
  }
  if (summarize_sets) set->summary = SummarizeNodes(set->nodes);
  return set;
}

// Nodes "n0100", "n0101", ... for the given ids, in the order given (ascending ids: a sorted
// set, as discovered sets are).
NodeSetConstSharedPtr Ids(const std::vector<int>& ids) {
  return Named(ids.size(), [&ids](size_t i) {
    std::string s = std::to_string(10000 + ids[i]);
    s[0] = 'n';
    return s;
  });
}
std::vector<int> Range(int from, int to) {  // [from, to)
  std::vector<int> out;
  for (int i = from; i < to; ++i) out.push_back(i);
  return out;
}
std::vector<int> Concat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
// The ids of the next `picks` picks.
std::vector<int> IdSequence(RoundRobinPicker& picker, int picks) {
  std::vector<int> out;
  for (uint32_t index : Sequence(picker, picks)) {
    out.push_back(std::stoi(std::string(picker.built_from()->nodes[index].host.view().substr(1))));
  }
  return out;
}

TEST_P(RoundRobinTest, RebuiltPickerGoesOnWithItsTurn) {
  // Sets that are not sorted (hosts descend): the turn goes on by position.
  auto descending = [](size_t n) {
    return Named(n, [n](size_t i) { return "10.0.0." + std::to_string(n - 1 - i); });
  };
  RoundRobinPicker p;
  p.Build(descending(10));
  EXPECT_EQ(Sequence(p, 3), (std::vector<uint32_t>{0, 1, 2}));  // a first build starts at 0
  p.Build(descending(10));                                      // a changed set of the same size
  EXPECT_EQ(Sequence(p, 6), (std::vector<uint32_t>{3, 4, 5, 6, 7, 8}));
  p.Build(descending(5));  // smaller: the position wraps
  EXPECT_EQ(Sequence(p, 3), (std::vector<uint32_t>{4, 0, 1}));
  // Weight classes each keep their own position; a new weight starts at its first node.
  p.Build(Set({1, 1, 1, 2, 2}));
  std::vector<uint32_t> seq = Sequence(p, 7), light, heavy;
  for (uint32_t i : seq) (i < 3 ? light : heavy).push_back(i);
  EXPECT_EQ(light, (std::vector<uint32_t>{2, 0, 1})) << ::testing::PrintToString(seq);
  EXPECT_EQ(heavy, (std::vector<uint32_t>{3, 4, 3, 4})) << ::testing::PrintToString(seq);
}

TEST_P(RoundRobinTest, SortedSetsGoOnFromTheNodeThatWasDue) {
  RoundRobinPicker p;
  p.Build(Ids(Range(0, 100)));
  EXPECT_EQ(IdSequence(p, 3), (std::vector<int>{0, 1, 2}));
  // Nodes leave before the turn's position (by position, the turn would skip 3..12) and
  // others join at the end.
  p.Build(Ids(Concat(Range(10, 100), Range(200, 210))));
  EXPECT_EQ(IdSequence(p, 3), (std::vector<int>{10, 11, 12}));  // 3..9 left: the next is 10
  // Nodes join before the position (by position, the turn would go back over 3..12, nodes
  // just served).
  p.Build(Ids(Concat(Range(0, 100), Range(200, 210))));
  EXPECT_EQ(IdSequence(p, 2), (std::vector<int>{13, 14}));
  // The node due leaves: the first one after it.
  p.Build(Ids(Concat(Range(0, 15), Range(16, 100))));
  EXPECT_EQ(IdSequence(p, 2), (std::vector<int>{16, 17}));
  // Nothing after it: the turn wraps to the first node.
  p.Build(Ids(Range(0, 18)));
  EXPECT_EQ(IdSequence(p, 3), (std::vector<int>{0, 1, 2}));
  // Every node is served once per turn across the changes: none twice before the others.
  p.Build(Ids(Range(0, 50)));
  std::vector<int> counts(50, 0);
  for (int round = 0; round < 20; ++round) {
    // Add and drop nodes below the position each time (ids 0..4 in and out).
    p.Build(Ids(round % 2 ? Range(0, 50) : Range(5, 50)));
    for (int id : IdSequence(p, 10)) ++counts[static_cast<size_t>(id)];
  }
  // 200 picks over nodes 5..49 (45 nodes, each in every set) and 0..4 (in every other set):
  // by node, each of 5..49 got 4 or 5, and none of 0..4 more than 5.
  for (int id = 5; id < 50; ++id) EXPECT_GE(counts[static_cast<size_t>(id)], 3) << id;
  EXPECT_LE(*std::max_element(counts.begin(), counts.end()), 5);
}

TEST_P(RoundRobinTest, ChurnStillSpreadsOverTheWholeSet) {
  // A set republished every 50 picks (node churn): every node gets its share, not only the
  // first 50 of each build.
  RoundRobinPicker p;
  std::vector<int> counts(1000, 0);
  for (int build = 0; build < 100; ++build) {
    p.Build(Set(std::vector<int>(1000, 1)));
    for (int i = 0; i < 50; ++i) ++counts[p.Pick(TriedSet())];
  }
  EXPECT_EQ(*std::min_element(counts.begin(), counts.end()), 5);
  EXPECT_EQ(*std::max_element(counts.begin(), counts.end()), 5);
}

TEST_P(RoundRobinTest, KeepsTheSetAlive) {
  RoundRobinPicker p;
  auto set = Set({1, 2});
  const NodeSet* raw = set.get();
  p.Build(std::move(set));
  EXPECT_EQ(p.built_from(), raw);
  EXPECT_EQ(raw->nodes.size(), 2u);
}

TEST(RoundRobinSummaryTest, AUniformSetIsBuiltFromItsSummaryAlone) {
  // A summary that disagrees with the nodes (producers never publish one) shows what the
  // build read: the summary's one weight, not the nodes' 5, 1, 1.
  auto set = std::make_shared<NodeSet>();
  for (int weight : {5, 1, 1}) {
    Node n;
    n.weight = weight;
    set->nodes.push_back(std::move(n));
  }
  set->summary = NodeSummary{.summarized = true, .uniform = true, .weight = 1};
  RoundRobinPicker p;
  p.Build(set);
  EXPECT_EQ(Sequence(p, 6), (std::vector<uint32_t>{0, 1, 2, 0, 1, 2}));
  // Without a summary the nodes are read: nginx's sequence for 5, 1, 1.
  auto plain = std::make_shared<NodeSet>();
  plain->nodes = set->nodes;
  p.Build(plain);
  EXPECT_EQ(Sequence(p, 7), (std::vector<uint32_t>{0, 0, 1, 0, 2, 0, 0}));
}

TEST(RoundRobinSummaryTest, SummarizedSetsPickAsTheNodeByNodeBuild) {
  // Two pickers fed the same sets, one summarized, one not, through rebuilds (of uniform and
  // mixed sets, growing and shrinking), first attempts, retries and down nodes: every pick
  // is the same.
  std::mt19937 rng(7);
  RoundRobinPicker summarized;
  RoundRobinPicker plain;
  for (int build = 0; build < 300; ++build) {
    const size_t n = 1 + rng() % (build % 3 == 0 ? 200 : 8);
    std::vector<int> weights(n, static_cast<int>(rng() % 4));  // 0: all weight 0
    std::vector<int> priorities;
    if (build % 5 == 4) {  // not uniform: the summary says so, the nodes are read
      for (int& w : weights) w = static_cast<int>(rng() % 3);
      priorities.resize(n);
      for (int& pr : priorities) pr = static_cast<int>(rng() % 2);
    }
    summarized.Build(Set(weights, priorities, /*summarize=*/true));
    plain.Build(Set(weights, priorities, /*summarize=*/false));
    if (build % 7 == 6) {
      TriedSet down;
      for (uint32_t i = 0; i < n; ++i) {
        if (rng() % 3 == 0) down.Add(i);
      }
      summarized.set_down(down);
      plain.set_down(down);
    }
    for (int pick = 0; pick < 40; ++pick) {
      TriedSet tried;
      if (rng() % 4 == 0) {
        for (uint32_t i = 0; i < n; ++i) {
          if (rng() % 2 == 0) tried.Add(i);
        }
      }
      ASSERT_EQ(summarized.Pick(tried), plain.Pick(tried))
          << "build " << build << " pick " << pick << " nodes " << n;
    }
  }
}

TEST(RoundRobinSummaryTest, RetryAfterAUniformBuildSeesTheNewNodes) {
  // The retry groups of a summarized build are made at its first retry, from the new set.
  RoundRobinPicker p;
  p.Build(Set({1, 1, 1, 1}, {}, /*summarize=*/true));
  TriedSet tried;
  tried.Add(0);
  EXPECT_NE(p.Pick(tried), 0u);
  p.Build(Set({2, 2}, {}, /*summarize=*/true));
  tried.Clear();
  tried.Add(1);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(p.Pick(tried), 0u);
  tried.Add(0);
  EXPECT_EQ(p.Pick(tried), kNone);
}

}  // namespace
}  // namespace turnpike::upstream
