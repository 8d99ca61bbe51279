#include "base/courtesy.h"

#include <sched.h>
#include <time.h>

namespace turnpike::base {
namespace courtesy_internal {

thread_local bool enabled = false;
thread_local uint32_t calls = 0;
thread_local int64_t last_ns = 0;
thread_local uint64_t yields = 0;
thread_local int64_t deadline_ns = 0;

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void Check() {
  int64_t now = NowNs();
  if (now - last_ns < kCourtesyIntervalNs) return;
  if (now >= deadline_ns) {  // the budget is spent: run on without yielding
    enabled = false;
    return;
  }
  sched_yield();
  ++yields;
  last_ns = NowNs();
}

}  // namespace courtesy_internal

void SetCourtesy(bool on) { SetCourtesyDeadline(on ? INT64_MAX : 0); }

void SetCourtesyFor(int64_t budget_ns) {
  SetCourtesyDeadline(courtesy_internal::NowNs() + budget_ns);
}

void SetCourtesyDeadline(int64_t deadline) {
  courtesy_internal::deadline_ns = deadline;
  courtesy_internal::enabled = deadline != 0;
}

int64_t CourtesyDeadline() {
  return courtesy_internal::enabled ? courtesy_internal::deadline_ns : 0;
}
bool CourtesyEnabled() { return courtesy_internal::enabled; }
uint64_t CourtesyYields() { return courtesy_internal::yields; }

}  // namespace turnpike::base
