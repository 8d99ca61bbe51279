#include "base/courtesy.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <thread>

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

thread_local int idle_depth = 0;         // IdleScopes open on this thread
thread_local bool idle_now = false;      // the thread is at SCHED_IDLE (an outermost scope acted)
thread_local int64_t idle_deadline = 0;  // when the scope's budget ends
thread_local uint64_t idle_spent = 0;

void LeaveIdle();  // below

void Check() {
  int64_t now = NowNs();
  if (idle_now) {
    if (now < idle_deadline) return;  // idle priority: every woken fair task preempts us
    LeaveIdle();                      // starved for the budget: our own policy again
    ++idle_spent;
  }
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

namespace {

// struct sched_attr of sched_setattr(2) (glibc 2.36 has neither the struct nor a wrapper).
struct SchedAttr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;  // SCHED_OTHER on Linux 6.12+: the task's slice
  uint64_t sched_deadline;
  uint64_t sched_period;
};

// The calling thread's attributes; false when the kernel has no sched_getattr.
bool GetSchedAttr(SchedAttr* attr) {
  *attr = {};
  return syscall(SYS_sched_getattr, 0, attr, static_cast<unsigned>(sizeof(*attr)), 0U) == 0;
}

// Sets the calling thread's attributes (`attr` as sched_getattr gave it, changed).
bool PutSchedAttr(SchedAttr attr) {
  attr.size = sizeof(attr);
  attr.sched_flags = 0;
  return syscall(SYS_sched_setattr, 0, &attr, 0U) == 0;
}

}  // namespace

bool SetBackgroundPriority(int nice) {
  SchedAttr attr;
  if (GetSchedAttr(&attr) &&
      (attr.sched_policy == SCHED_OTHER || attr.sched_policy == SCHED_BATCH ||
       attr.sched_policy == SCHED_IDLE)) {  // the fair class: the policy stays as it is
    if (attr.sched_nice < nice) attr.sched_nice = nice;
    attr.sched_runtime = static_cast<uint64_t>(kBackgroundSliceNs);
    attr.sched_deadline = attr.sched_period = 0;
    if (PutSchedAttr(attr)) return true;
  }
  // No sched_setattr, or a real-time policy set by the operator: the nice alone, if lower.
  auto tid = static_cast<id_t>(gettid());
  errno = 0;
  int current = getpriority(PRIO_PROCESS, tid);
  if (errno != 0) return false;
  return current >= nice || setpriority(PRIO_PROCESS, tid, nice) == 0;
}

namespace {

// The fair-class attributes a scope leaves and comes back to.
thread_local SchedAttr saved_attr;
std::atomic<int> idle_scopes{0};  // 0: not probed, 1: available, -1: not available

// saved_attr with `policy`: SCHED_IDLE to enter a scope, saved_attr's own to leave it.
bool SetPolicy(uint32_t policy) {
  SchedAttr attr = saved_attr;
  attr.sched_policy = policy;
  return PutSchedAttr(attr);
}

}  // namespace

// On a thread of its own, as the threads that will use scopes run: the background nice and
// slice, then SCHED_IDLE, then back.
bool CanLeaveIdlePriority(int nice) {
  bool ok = false;
  std::thread probe([&ok, nice] {
    SetBackgroundPriority(nice);
    if (!GetSchedAttr(&saved_attr) || saved_attr.sched_policy != SCHED_OTHER) return;
    if (!SetPolicy(SCHED_IDLE)) return;
    ok = SetPolicy(SCHED_OTHER) && ThreadSchedPolicy() == SCHED_OTHER;
  });
  probe.join();
  return ok;
}

namespace courtesy_internal {
void LeaveIdle() {
  SetPolicy(saved_attr.sched_policy);  // probed: it cannot fail for want of privileges
  idle_now = false;
}
}  // namespace courtesy_internal

bool EnableIdleScopes(int nice) {
  int state = idle_scopes.load(std::memory_order_acquire);
  if (state == 0) {
    state = CanLeaveIdlePriority(nice) ? 1 : -1;
    idle_scopes.store(state, std::memory_order_release);
  }
  return state == 1;
}

bool IdleScopesEnabled() { return idle_scopes.load(std::memory_order_acquire) == 1; }

IdleScope::IdleScope() {
  namespace ci = courtesy_internal;
  if (ci::idle_depth++ != 0 || !ci::enabled || !IdleScopesEnabled()) return;
  if (!GetSchedAttr(&saved_attr) || saved_attr.sched_policy != SCHED_OTHER) return;
  if (!SetPolicy(SCHED_IDLE)) return;
  // A woken worker preempts an idle thread at once, but one that is already runnable (this
  // thread preempted it when it woke up at its own policy) is not woken again: it would wait
  // for the next tick (4 ms at HZ=250) or the end of the work, ~1.5 ms per node-churn change
  // (docs/benchmarks.md). The policy change itself asks for no reschedule (a task's prio is
  // its nice, unchanged), and sched_yield() does not hand the CPU over for sure under EEVDF
  // (it picks this thread again when the worker's lag is negative). A short sleep does: the
  // thread leaves the run queue, and waking at SCHED_IDLE it preempts nobody.
  std::this_thread::sleep_for(std::chrono::microseconds(1));
  ci::idle_now = true;
  ci::idle_deadline = ci::NowNs() + kIdleBudgetNs;
  acted_ = true;
}

IdleScope::~IdleScope() {
  namespace ci = courtesy_internal;
  --ci::idle_depth;
  if (acted_ && ci::idle_now) ci::LeaveIdle();
}

int ThreadSchedPolicy() {
  SchedAttr attr;
  return GetSchedAttr(&attr) ? static_cast<int>(attr.sched_policy) : -1;
}

int ThreadNice() {
  SchedAttr attr;
  return GetSchedAttr(&attr) ? attr.sched_nice : 0;
}

uint64_t IdleBudgetsSpent() { return courtesy_internal::idle_spent; }

int64_t ThreadTimeSliceNs() {
  SchedAttr attr;
  return GetSchedAttr(&attr) ? static_cast<int64_t>(attr.sched_runtime) : 0;
}

}  // namespace turnpike::base
