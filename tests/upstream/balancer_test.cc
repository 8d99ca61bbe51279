// The balancer seam (upstream/balancer.h) and the node-set slot (upstream/node_set_slot.h):
// pickers behind the interface, health bits with fail-open, the stateless fallback pick, and
// the slot's pointer-compare contract.
#include "upstream/balancer.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "upstream/node_set_slot.h"
#include "upstream/round_robin.h"

namespace turnpike::upstream {
namespace {

constexpr uint32_t kNone = Picker::kNone;

NodeSetConstSharedPtr Set(const std::vector<int>& weights,
                          const std::vector<int>& priorities = {}) {
  auto set = std::make_shared<NodeSet>();
  for (size_t i = 0; i < weights.size(); ++i) {
    Node n;
    n.host = "10.0.0." + std::to_string(i + 1);
    n.port = 80;
    n.weight = weights[i];
    n.priority = i < priorities.size() ? priorities[i] : 0;
    set->nodes.push_back(n);
  }
  return set;
}

TEST(BalancerTest, NewPickerIsRoundRobinBehindTheInterface) {
  std::unique_ptr<Picker> p = NewPicker(BalancerType::kRoundRobin);
  ASSERT_NE(dynamic_cast<RoundRobinPicker*>(p.get()), nullptr);
  EXPECT_EQ(p->built_from(), nullptr);
  TriedSet none;
  EXPECT_EQ(p->Pick(none), kNone) << "never built";
  NodeSetConstSharedPtr set = Set({1, 1});
  p->Build(set);
  EXPECT_EQ(p->built_from(), set.get());
  EXPECT_EQ(p->set(), set);
  EXPECT_EQ(p->Pick(none), 0u);
  EXPECT_EQ(p->Pick(none), 1u);
}

TEST(BalancerTest, DownNodesAreSkippedUntilAllAreDown) {
  RoundRobinPicker p;
  p.Build(Set({1, 1, 1}));
  TriedSet down;
  down.Add(1);
  p.set_down(down);
  TriedSet none;
  for (int i = 0; i < 6; ++i) EXPECT_NE(p.Pick(none), 1u);
  // Every untried node down: all are used (fail-open, as APISIX's health checker).
  down.Add(0);
  down.Add(2);
  p.set_down(down);
  TriedSet tried;
  uint32_t first = p.Pick(tried);
  ASSERT_NE(first, kNone);
  tried.Add(first);
  EXPECT_NE(p.Pick(tried), kNone);
  // A rebuild forgets health: indexes referred to the old set.
  p.Build(Set({1, 1}));
  EXPECT_EQ(p.down().count(), 0u);
}

TEST(BalancerTest, DownAndTriedCombine) {
  RoundRobinPicker p;
  p.Build(Set({1, 1, 1}));
  TriedSet down;
  down.Add(2);
  p.set_down(down);
  TriedSet tried;
  tried.Add(0);
  EXPECT_EQ(p.Pick(tried), 1u) << "the only node neither tried nor down";
  tried.Add(1);
  EXPECT_EQ(p.Pick(tried), 2u) << "fail-open: the down node rather than nothing";
  tried.Add(2);
  EXPECT_EQ(p.Pick(tried), kNone);
}

TEST(BalancerTest, PickUntriedPrefersWeightThenPriority) {
  NodeSetConstSharedPtr set = Set({0, 1, 1, 2}, {5, 0, 3, 3});
  TriedSet tried;
  EXPECT_EQ(PickUntried(*set, tried), 2u) << "highest priority among weight > 0, first index";
  tried.Add(2);
  EXPECT_EQ(PickUntried(*set, tried), 3u);
  tried.Add(3);
  EXPECT_EQ(PickUntried(*set, tried), 1u);
  tried.Add(1);
  EXPECT_EQ(PickUntried(*set, tried), 0u) << "weight 0 only when nothing else is left";
  tried.Add(0);
  EXPECT_EQ(PickUntried(*set, tried), kNone);
  EXPECT_EQ(PickUntried(NodeSet{}, TriedSet{}), kNone);
}

TEST(BalancerTest, TriedSetMerge) {
  TriedSet a, b;
  a.Add(1);
  b.Add(1);
  b.Add(70);
  b.Add(3);
  a.Merge(b);
  EXPECT_EQ(a.count(), 3u);
  EXPECT_TRUE(a.Contains(70));
  EXPECT_TRUE(a.Contains(3));
}

TEST(NodeSetSlotTest, StartsEmptyAndSwapsByPointer) {
  NodeSetSlot slot;
  EXPECT_EQ(slot.Peek(), EmptyNodeSet().get());
  EXPECT_TRUE(slot.Load()->nodes.empty());
  NodeSetConstSharedPtr a = Set({1});
  NodeSetConstSharedPtr replaced = slot.Store(a);
  EXPECT_EQ(replaced, EmptyNodeSet());
  EXPECT_EQ(slot.Peek(), a.get());
  EXPECT_EQ(slot.Load(), a);
  NodeSetConstSharedPtr b = Set({1, 2});
  EXPECT_EQ(slot.Store(b), a) << "the replaced set goes back to the caller, not destroyed";
  EXPECT_EQ(slot.Peek(), b.get());
  EXPECT_EQ(slot.Store(nullptr), b);
  EXPECT_EQ(slot.Peek(), EmptyNodeSet().get()) << "null stores the empty set";
}

TEST(NodeSetSlotTest, PickerRebuildsOnlyWhenThePointerChanges) {
  NodeSetSlot slot(Set({1, 1}));
  RoundRobinPicker picker;
  int builds = 0;
  auto current = [&] {
    if (picker.built_from() != slot.Peek()) {
      picker.Build(slot.Load());
      ++builds;
    }
    return picker.built_from();
  };
  const NodeSet* first = current();
  EXPECT_EQ(current(), first);
  EXPECT_EQ(builds, 1);
  slot.Store(Set({1, 1, 1}));
  EXPECT_NE(current(), first);
  EXPECT_EQ(builds, 2);
  EXPECT_EQ(picker.built_from()->nodes.size(), 3u);
}

}  // namespace
}  // namespace turnpike::upstream
