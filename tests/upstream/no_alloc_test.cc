// Pickers' Pick() must not allocate (support/alloc_counter counts the calling thread's
// heap allocations).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "support/alloc_counter.h"
#include "upstream/balancer.h"
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

// Every balancer's Pick() (and the attempt reports of those that count attempts) must not
// allocate, first attempts and retries alike, with node indexes past the tried set's bits.
NodeSetConstSharedPtr MixedSet(int nodes) {
  auto set = std::make_shared<NodeSet>();
  for (int i = 0; i < nodes; ++i) {
    Node n;
    n.host = n.ip_text = "10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256);
    n.port = 80;
    n.weight = i % 11 == 5 ? 0 : 1 + i % 4;
    n.priority = i % 3;
    set->nodes.push_back(n);
  }
  return set;
}

TEST(PickerNoAllocTest, EveryBalancerPicksWithoutAllocating) {
  for (BalancerType type : {BalancerType::kRoundRobin, BalancerType::kChash,
                            BalancerType::kLeastConn, BalancerType::kEwma}) {
    for (int nodes : {2, 100, 1000}) {
      std::unique_ptr<Picker> picker = NewPicker(type);
      picker->Build(MixedSet(nodes));
      TriedSet tried;
      tried.Add(0);
      tried.Add(static_cast<uint32_t>(nodes - 1));  // overflow storage when >= 64, made now
      TriedSet down;
      down.Add(1);
      TriedSet none;
      PickLease lease;
      PickRequest first{&none, 0, 0};
      PickRequest retry{&tried, 0, 0};
      // Warm: the pickers' own scratch (tried + down) reaches its capacity. Node 1 stays down
      // for half of the picks, so both paths are measured.
      picker->set_down(down);
      picker->Pick(retry);
      volatile uint32_t sink = 0;
      const uint64_t before = turnpike::testing::ThreadAllocations();
      for (uint32_t i = 0; i < 2000; ++i) {
        if (i == 1000) picker->set_down(none);  // copies into down_'s capacity
        first.hash = retry.hash = i * 2654435761u;
        first.now_ms = retry.now_ms = i;
        const uint32_t a = picker->Pick(first);
        if (picker->tracks_attempts()) lease.Take(picker.get(), a, i);
        const uint32_t b = picker->Pick(retry);
        if (picker->tracks_attempts()) {
          lease.Take(picker.get(), b, i);  // ends a's lease first
          lease.End(i + 1, true);
        }
        sink = sink + a + b;
      }
      EXPECT_EQ(turnpike::testing::ThreadAllocations() - before, 0u)
          << BalancerTypeName(type) << " at " << nodes << " nodes";
      EXPECT_NE(sink, 0u);
    }
  }
}

}  // namespace
}  // namespace turnpike::upstream
