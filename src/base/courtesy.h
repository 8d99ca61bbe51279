// Cooperative yielding for background work on CPUs that also serve traffic.
//
// A reload parses and compiles for hundreds of milliseconds. Running it at a lower nice value
// limits its share of the CPU, but once the scheduler picks it, it keeps the CPU for a whole
// time slice (milliseconds), and a worker woken meanwhile waits that long: under wrk that
// showed as +2 ms at p99. A thread that opts in calls CourtesyPoint() often (per YAML event,
// per config item, per route built); every kCourtesyInterval it gives the CPU away with
// sched_yield(), so a waiting worker runs within that interval. With nothing else runnable the
// yield returns at once. Threads that did not opt in pay one thread-local load per call.
#pragma once

#include <cstdint>

namespace turnpike::base {

inline constexpr int64_t kCourtesyIntervalNs = 100'000;  // 100 us

// Per thread; off by default. SetCourtesyFor(d) turns it on for `d` of wall time from now
// and then off by itself: yielding trades the background work's speed for the workers'
// latency, and the budget bounds how long that trade lasts when the CPUs stay busy (a
// reload still completes, at its nice value, instead of yielding to every other task for
// ever). SetCourtesy(true) has no budget.
void SetCourtesy(bool on);
void SetCourtesyFor(int64_t budget_ns);
bool CourtesyEnabled();
// When this thread's courtesy ends (steady clock ns; INT64_MAX without a budget), for
// handing it on to helper threads.
int64_t CourtesyDeadline();
void SetCourtesyDeadline(int64_t deadline_ns);
// How many times this thread has yielded (for tests and debugging).
uint64_t CourtesyYields();

// Courtesy points cover the loops of background work, not what runs between them (a JSON
// parse inside a library, freeing a 10k-node set). On Linux 6.12+ (EEVDF with per-task
// slices) a fair task's sched_runtime is its time slice: a thread that asks for
// kBackgroundSliceNs instead of the default (1.4 ms on the 2-CPU test machines) lets a worker
// woken meanwhile preempt it sooner, when the scheduler finds the worker eligible (it does
// not always: docs/benchmarks.md, node churn, `perf sched`; a reload under load gained 16% on
// p99). SetBackgroundPriority(nice) moves the calling thread to `nice` (never lower than it
// is: raising a priority needs privileges) and asks for that slice in one sched_setattr(2),
// keeping its policy; older kernels ignore the slice and only the nice applies. False (errno
// set) only when the nice could not be set.
inline constexpr int64_t kBackgroundSliceNs = 100'000;  // the kernel's minimum
bool SetBackgroundPriority(int nice);
// The calling thread's time slice as the kernel reports it (sched_getattr's sched_runtime;
// 0 where the kernel has no per-task slice), for tests and debugging.
int64_t ThreadTimeSliceNs();

namespace courtesy_internal {
extern thread_local bool enabled;
extern thread_local uint32_t calls;
void Check();
int64_t NowNs();
}  // namespace courtesy_internal

// Cheap: a clock read every 64 units of work, a yield at most every kCourtesyIntervalNs.
// `work` is how many units the caller did since its last point: 1 for a loop over small
// items (a node, a JSON token), the item count for a step that took many at once (a run of
// 250 nodes copied in one insert), so coarse loops still reach the clock.
inline void CourtesyPoint(uint32_t work = 1) {
  if (!courtesy_internal::enabled) return;
  const uint32_t before = courtesy_internal::calls;
  courtesy_internal::calls = before + work;
  if ((before >> 6) == (courtesy_internal::calls >> 6)) return;
  courtesy_internal::Check();
}

}  // namespace turnpike::base
