// RoundRobinPicker::Pick() must not allocate (support/alloc_counter counts the calling thread's heap
// allocations).
#include <gtest/gtest.h>

#include "support/alloc_counter.h"

#include <memory>

#include "upstream/round_robin.h"


namespace turnpike::upstream {
namespace {

TEST(RoundRobinNoAllocTest, PickDoesNotAllocate) {
  for (int weight_spread : {1, 5, 50000}) {
    auto set = std::make_shared<NodeSet>();
    for (int i = 0; i < 100; ++i) {
      Node n;
      n.weight = 1 + (i * 7919) % weight_spread;
      n.priority = i % 3;
      set->nodes.push_back(n);
    }
    RoundRobinPicker picker;
    picker.Build(set);
    TriedSet tried;
    tried.Add(3);
    tried.Add(90);  // overflow storage, allocated before the measurement
    TriedSet none;
    volatile uint32_t sink = 0;
    const uint64_t before = turnpike::testing::ThreadAllocations();
    for (int i = 0; i < 1000; ++i) {
      sink = sink + picker.Pick(none);
      sink = sink + picker.Pick(tried);
    }
    EXPECT_EQ(turnpike::testing::ThreadAllocations() - before, 0u);
    EXPECT_NE(sink, 0u);
  }
}

}  // namespace
}  // namespace turnpike::upstream
