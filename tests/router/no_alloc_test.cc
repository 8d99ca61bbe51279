// RouteTable::Match() must not allocate. This file replaces the global allocation functions of
// router_test (all but the aligned ones) with counting ones; only the calling thread's
// count is observed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "router/route_table.h"

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

namespace turnpike::router {
namespace {

TEST(RouteTableNoAllocTest, MatchDoesNotAllocate) {
  std::vector<RouteKey> keys;
  for (int i = 0; i < 1000; ++i) {
    RouteKey k;
    const std::string n = std::to_string(i);
    k.uris = {std::string("/svc").append(n).append("/x"),
              std::string("/svc").append(n).append("/*"),
              std::string("/g").append(n).append("/*/end")};
    if (i % 3 == 0) {
      k.hosts = {std::string("h").append(n).append(".com"),
                 std::string("*.w").append(n).append(".com")};
    }
    k.methods = i % 2 ? base::kAnyMethod : base::MaskOf(base::Method::kPost);
    k.payload = static_cast<uint32_t>(i);
    keys.push_back(std::move(k));
  }
  auto table = RouteTable::Build(std::move(keys));
  const std::string paths[] = {"/svc3/x", "/svc4/y/z", "/g5/a/b/end", "/g5/a/b/nope", "/none"};
  const std::string hosts[] = {"h3.com", "a.w3.com", "other.com", ""};

  volatile uint32_t sink = 0;
  const size_t before = allocations;
  for (const auto& p : paths) {
    for (const auto& h : hosts) {
      sink = sink + table->Match(base::Method::kGet, h, p);
      sink = sink + table->Match(base::Method::kPost, h, p);
    }
  }
  EXPECT_EQ(allocations - before, 0u);
  EXPECT_NE(sink, 0u);
}

}  // namespace
}  // namespace turnpike::router
