// RoundRobinPicker::Pick() must not allocate. This file replaces the global allocation functions of
// upstream_test (all but the aligned ones) with counting ones; only the calling thread's
// count is observed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <new>

#include "upstream/round_robin.h"

namespace {
thread_local size_t allocations = 0;
}  // namespace

// GCC pairs the replaced operator new with std::free and warns although that is the point.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(size_t size) {
  ++allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) { return operator new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  ++allocations;
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

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
    const size_t before = allocations;
    for (int i = 0; i < 1000; ++i) {
      sink = sink + picker.Pick(none);
      sink = sink + picker.Pick(tried);
    }
    EXPECT_EQ(allocations - before, 0u);
    EXPECT_NE(sink, 0u);
  }
}

}  // namespace
}  // namespace turnpike::upstream
