#include "base/courtesy.h"

#include <sched.h>
#include <time.h>

namespace turnpike::base {
namespace courtesy_internal {

thread_local bool enabled = false;
thread_local uint32_t calls = 0;
thread_local int64_t last_ns = 0;
thread_local uint64_t yields = 0;

namespace {
int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
}  // namespace

void Check() {
  int64_t now = NowNs();
  if (now - last_ns < kCourtesyIntervalNs) return;
  sched_yield();
  ++yields;
  last_ns = NowNs();
}

}  // namespace courtesy_internal

void SetCourtesy(bool on) { courtesy_internal::enabled = on; }
bool CourtesyEnabled() { return courtesy_internal::enabled; }
uint64_t CourtesyYields() { return courtesy_internal::yields; }

}  // namespace turnpike::base
