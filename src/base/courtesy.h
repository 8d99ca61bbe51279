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

// Idle priority for a stretch of background work. Yielding every 100 us still leaves the
// background thread its fair share of a CPU a worker keeps busy (~10% at nice 10), and under
// node churn that share, taken in bursts ten times a second, set the workers' p99
// (docs/benchmarks.md, node churn at 20 changes a second: 1.54x at nice 10, 1.14x with the
// control thread SCHED_IDLE). An IdleScope moves the calling thread to SCHED_IDLE while it
// lives and sleeps 1 us on the way in, so that a worker this thread preempted before (waking
// up at its own policy) gets its CPU back at once; a worker woken meanwhile preempts it at
// once, and it runs where the workers leave the CPU idle. SCHED_IDLE still gets a sliver of
// a CPU kept busy (weight 3 against 1024), so a scope has a budget: at the first courtesy
// point after kIdleBudgetNs of wall time, the thread goes back to its own policy (nice and
// slice as before) and yields as usual for the rest of the scope. Inside the budget courtesy
// points do not yield (nothing would wait for it).
//
// Leaving SCHED_IDLE for SCHED_OTHER needs CAP_SYS_NICE (or an RLIMIT_NICE that allows the
// thread's nice value): EnableIdleScopes() tries the round trip once, on a thread of its own,
// and scopes stay no-ops where it failed (a container without CAP_SYS_NICE), so a thread is
// never left at idle priority. Scopes nest (the outermost one acts) and act only on threads
// with courtesy enabled. Threads created inside a scope would inherit SCHED_IDLE: create none.
// A lock taken inside a scope that a worker on another CPU may wait for is a priority
// inversion (the holder, preempted, runs again only when its CPU has time to spare): the
// discovery code inside scopes shares only NodeSetSlot's mutex with workers (held for a
// pointer swap or copy; a worker takes it once per node set it switches to) and spdlog's
// (error and info lines).
inline constexpr int64_t kIdleBudgetNs = 50'000'000;  // 50 ms
// Once per process, from any thread, with the nice value of the threads that will open
// scopes (their way back from SCHED_IDLE is to that nice). True when scopes act from now on.
bool EnableIdleScopes(int nice);
// The probe EnableIdleScopes() runs: a new thread at `nice` goes to SCHED_IDLE and back.
bool CanLeaveIdlePriority(int nice);
bool IdleScopesEnabled();
class IdleScope {
 public:
  IdleScope();
  ~IdleScope();
  IdleScope(const IdleScope&) = delete;
  IdleScope& operator=(const IdleScope&) = delete;

 private:
  bool acted_ = false;
};
// The calling thread's scheduling policy (SCHED_OTHER, SCHED_IDLE, ...; -1 on error), its nice
// value, and how many scopes it left early for their budget: for tests and debugging.
int ThreadSchedPolicy();
int ThreadNice();
uint64_t IdleBudgetsSpent();

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
