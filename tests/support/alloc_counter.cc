#include "support/alloc_counter.h"

#include <errno.h>
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
// sanitizer/allocator_interface.h (not installed with Debian's gcc): the sanitizer runtime's
// allocation hooks, called for every allocation and deallocation of its allocator.
extern "C" int __sanitizer_install_malloc_and_free_hooks(
    void (*malloc_hook)(const volatile void* ptr, size_t size),
    void (*free_hook)(const volatile void* ptr));
#endif

namespace {
std::atomic<uint64_t> g_total{0};
std::atomic<uint64_t> g_malloc_calls{0};
thread_local uint64_t t_count = 0;

void CountMalloc() { g_malloc_calls.fetch_add(1, std::memory_order_relaxed); }

void* Count(size_t size) {
  ++t_count;
  g_total.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
}  // namespace

namespace turnpike::testing {
uint64_t ThreadAllocations() { return t_count; }
uint64_t TotalAllocations() { return g_total.load(std::memory_order_relaxed); }
uint64_t MallocCalls() { return g_malloc_calls.load(std::memory_order_relaxed); }
}  // namespace turnpike::testing

#if defined(__SANITIZE_ADDRESS__)
// The sanitizer's allocator serves every malloc of the process; its hook sees each one.
namespace {
void OnSanitizerMalloc(const volatile void* /*ptr*/, size_t /*size*/) { CountMalloc(); }
void OnSanitizerFree(const volatile void* /*ptr*/) {}  // the runtime takes both hooks or none
[[maybe_unused]] const bool g_hooked =
    __sanitizer_install_malloc_and_free_hooks(OnSanitizerMalloc, OnSanitizerFree) != 0;
}  // namespace
#else
// The binary's malloc family: glibc's own entry points, counted. glibc's functions call
// these too (its malloc is interposable), so every C heap allocation of the process passes
// here. free is replaced with the rest (glibc asks that the family be replaced together).
extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t n, size_t size);
void* __libc_realloc(void* p, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void __libc_free(void* p);

void* malloc(size_t size) noexcept {
  CountMalloc();
  return __libc_malloc(size);
}
void* calloc(size_t n, size_t size) noexcept {
  CountMalloc();
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t size) noexcept {
  CountMalloc();
  return __libc_realloc(p, size);
}
void free(void* p) noexcept { __libc_free(p); }
void* memalign(size_t alignment, size_t size) noexcept {
  CountMalloc();
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) noexcept {
  CountMalloc();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) noexcept {
  if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
  CountMalloc();
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
}  // extern "C"
#endif

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
