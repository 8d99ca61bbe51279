#include "support/alloc_counter.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<uint64_t> g_total{0};
thread_local uint64_t t_count = 0;

void* Count(size_t size) {
  ++t_count;
  g_total.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
}  // namespace

namespace turnpike::testing {
uint64_t ThreadAllocations() { return t_count; }
uint64_t TotalAllocations() { return g_total.load(std::memory_order_relaxed); }
}  // namespace turnpike::testing

// GCC pairs the replaced operator new with std::free and warns although that is the point.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(size_t size) {
  if (void* p = Count(size)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) { return operator new(size); }
void* operator new(size_t size, const std::nothrow_t&) noexcept { return Count(size); }
void* operator new[](size_t size, const std::nothrow_t&) noexcept { return Count(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
