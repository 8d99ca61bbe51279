#include "base/courtesy.h"

#include <gtest/gtest.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace turnpike::base {
namespace {

// Calls CourtesyPoint() for `d` of wall time; returns the yields made meanwhile.
uint64_t SpinFor(std::chrono::nanoseconds d) {
  uint64_t before = CourtesyYields();
  auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 1000; ++i) CourtesyPoint();
  }
  return CourtesyYields() - before;
}

TEST(CourtesyTest, OffByDefaultAndPerThread) {
  std::thread([] {
    EXPECT_FALSE(CourtesyEnabled());
    EXPECT_EQ(SpinFor(std::chrono::milliseconds(5)), 0u);
  }).join();
}

TEST(CourtesyTest, AStepOfManyUnitsReachesTheClock) {
  std::thread([] {
    SetCourtesy(true);
    uint64_t before = CourtesyYields();
    for (int i = 0; i < 3; ++i) {
      auto end =
          std::chrono::steady_clock::now() + std::chrono::nanoseconds(2 * kCourtesyIntervalNs);
      while (std::chrono::steady_clock::now() < end) {
      }
      CourtesyPoint(250);  // one step worth 250 units: the clock is read, and a yield is due
    }
    EXPECT_EQ(CourtesyYields() - before, 3u);
    SetCourtesy(false);
  }).join();
}

TEST(CourtesyTest, YieldsAtMostOncePerInterval) {
  std::thread([] {
    SetCourtesy(true);
    uint64_t yields = SpinFor(std::chrono::milliseconds(20));
    // 20 ms at one yield per 100 us: about 200 (fewer if this thread was descheduled).
    EXPECT_GE(yields, 5u);
    EXPECT_LE(yields, 20'000'000 / kCourtesyIntervalNs + 1);
    SetCourtesy(false);
    EXPECT_EQ(SpinFor(std::chrono::milliseconds(2)), 0u);
  }).join();
}

TEST(CourtesyTest, ABudgetEndsIt) {
  std::thread([] {
    SetCourtesyFor(5'000'000);  // 5 ms
    EXPECT_TRUE(CourtesyEnabled());
    EXPECT_NE(CourtesyDeadline(), 0);
    uint64_t yields = SpinFor(std::chrono::milliseconds(30));
    EXPECT_GE(yields, 1u);
    EXPECT_LE(yields, 5'000'000 / kCourtesyIntervalNs + 1);  // none after the budget
    EXPECT_FALSE(CourtesyEnabled());
    EXPECT_EQ(CourtesyDeadline(), 0);
  }).join();
}

// Each case runs on its own thread: nice and slice are per thread and cannot be undone
// without privileges.
TEST(CourtesyTest, BackgroundPriorityLowersTheNiceAndShortensTheSlice) {
  std::thread([] {
    const int64_t slice_before = ThreadTimeSliceNs();
    const int nice_before = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
    const int policy_before = sched_getscheduler(0);
    ASSERT_TRUE(SetBackgroundPriority(5));
    EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())), std::max(nice_before, 5));
    EXPECT_EQ(sched_getscheduler(0), policy_before);
    // Kernels without per-task slices (before 6.12) report none and keep none.
    if (slice_before != 0) {
      EXPECT_EQ(ThreadTimeSliceNs(), kBackgroundSliceNs);
    } else {
      EXPECT_EQ(ThreadTimeSliceNs(), 0);
    }
  }).join();
}

TEST(CourtesyTest, BackgroundPriorityNeverRaisesAndKeepsThePolicy) {
  std::thread([] {
    sched_param param{};
    ASSERT_EQ(sched_setscheduler(0, SCHED_BATCH, &param), 0);
    ASSERT_EQ(setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 8), 0);
    ASSERT_TRUE(SetBackgroundPriority(5));
    EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())), 8);
    EXPECT_EQ(sched_getscheduler(0), SCHED_BATCH);
  }).join();
}

// Idle scopes need a way back from SCHED_IDLE (CAP_SYS_NICE, as root in CI); where the probe
// fails they do nothing, which IdleScopesDoNothingWhereTheWayBackIsClosed covers.
bool IdleScopesHere() { return EnableIdleScopes(10); }

// Runs `body` on a thread of its own set up as the control thread runs discovery: nice 10,
// courtesy on.
template <typename F>
void OnBackgroundThread(F body) {
  std::thread([&body] {
    ASSERT_TRUE(SetBackgroundPriority(10));
    SetCourtesy(true);
    body();
  }).join();
}

TEST(CourtesyTest, AnIdleScopeRunsAtIdlePriorityAndComesBack) {
  if (!IdleScopesHere()) GTEST_SKIP() << "no way back from SCHED_IDLE here (CAP_SYS_NICE)";
  OnBackgroundThread([] {
    const int64_t slice = ThreadTimeSliceNs();
    EXPECT_EQ(ThreadSchedPolicy(), SCHED_OTHER);
    {
      IdleScope scope;
      EXPECT_EQ(ThreadSchedPolicy(), SCHED_IDLE);
      {
        IdleScope nested;  // the outermost scope acts
        EXPECT_EQ(ThreadSchedPolicy(), SCHED_IDLE);
      }
      EXPECT_EQ(ThreadSchedPolicy(), SCHED_IDLE);
      // Inside its budget a scope's courtesy points do not yield (unless other work kept this
      // thread off the CPUs for the whole budget meanwhile).
      const uint64_t spent = IdleBudgetsSpent();
      const uint64_t yields = SpinFor(std::chrono::milliseconds(5));
      if (IdleBudgetsSpent() == spent) {
        EXPECT_EQ(yields, 0u);
      }
    }
    EXPECT_EQ(ThreadSchedPolicy(), SCHED_OTHER);
    EXPECT_EQ(ThreadNice(), 10);
    EXPECT_EQ(ThreadTimeSliceNs(), slice);
  });
}

TEST(CourtesyTest, AnIdleScopeActsOnlyWithCourtesyOn) {
  if (!IdleScopesHere()) GTEST_SKIP() << "no way back from SCHED_IDLE here (CAP_SYS_NICE)";
  std::thread([] {
    IdleScope scope;  // a worker's thread, say: courtesy is off
    EXPECT_EQ(ThreadSchedPolicy(), SCHED_OTHER);
  }).join();
}

TEST(CourtesyTest, AnIdleScopeOverItsBudgetGoesBackAndYields) {
  if (!IdleScopesHere()) GTEST_SKIP() << "no way back from SCHED_IDLE here (CAP_SYS_NICE)";
  OnBackgroundThread([] {
    const uint64_t spent = IdleBudgetsSpent();
    IdleScope scope;
    EXPECT_EQ(ThreadSchedPolicy(), SCHED_IDLE);
    // Past the budget (a CPU kept busy would starve the scope): the thread's own policy again,
    // and the usual yields.
    const auto start = std::chrono::steady_clock::now();
    while (IdleBudgetsSpent() == spent &&
           std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
      CourtesyPoint();
    }
    EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::nanoseconds(kIdleBudgetNs));
    EXPECT_EQ(ThreadSchedPolicy(), SCHED_OTHER);
    EXPECT_EQ(ThreadNice(), 10);
    EXPECT_EQ(IdleBudgetsSpent(), spent + 1);
    EXPECT_GT(SpinFor(std::chrono::milliseconds(5)), 0u);
  });
}

// capget/capset on the calling thread only (credentials are per thread on Linux).
bool DropSysNice() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  data[CAP_TO_INDEX(CAP_SYS_NICE)].effective &= ~CAP_TO_MASK(CAP_SYS_NICE);
  data[CAP_TO_INDEX(CAP_SYS_NICE)].permitted &= ~CAP_TO_MASK(CAP_SYS_NICE);
  return syscall(SYS_capset, &header, data) == 0;
}

TEST(CourtesyTest, IdleScopesDoNothingWhereTheWayBackIsClosed) {
  rlimit nice_limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NICE, &nice_limit), 0);
  if (nice_limit.rlim_cur >= 10) GTEST_SKIP() << "RLIMIT_NICE lets any thread come back";
  std::thread([] {
    ASSERT_TRUE(DropSysNice());
    // The probe runs on a thread of this one's credentials: no CAP_SYS_NICE, no way back.
    EXPECT_FALSE(CanLeaveIdlePriority(10));
    EXPECT_EQ(ThreadSchedPolicy(), SCHED_OTHER);  // the probe's thread went, not this one
  }).join();
}

// A worker this thread preempted before it entered the scope (runnable, not woken again) runs
// before the scope's work does: the policy change alone asks for no reschedule, and the worker
// would wait for the next tick (docs/benchmarks.md, node churn: ~1.5 ms per change). Under
// EEVDF a sched_yield() is not enough (it picks the yielding thread again when the worker's
// lag is negative).
TEST(CourtesyTest, AnIdleScopeLetsARunnableThreadOfItsCpuRunFirst) {
  if (!IdleScopesHere()) GTEST_SKIP() << "no way back from SCHED_IDLE here (CAP_SYS_NICE)";
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> progress{0};
  std::thread worker([&] {  // always runnable, on the same CPU
    ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof(one), &one), 0);
    while (!stop.load(std::memory_order_relaxed)) progress.fetch_add(1, std::memory_order_relaxed);
  });
  OnBackgroundThread([&] {
    ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof(one), &one), 0);
    while (progress.load(std::memory_order_relaxed) == 0) {
    }
    // Running now, so the worker is runnable and waiting (it never sleeps). Other tasks on
    // this CPU (tests run in parallel) may take the CPU in its place and EEVDF may then pick
    // this thread again first: a few tries (without the nap none hands over; with it, on an
    // otherwise idle CPU, the first one does).
    bool handed_over = false;
    for (int attempt = 0; attempt < 5 && !handed_over; ++attempt) {
      const uint64_t before = progress.load(std::memory_order_relaxed);
      IdleScope scope;
      handed_over = progress.load(std::memory_order_relaxed) > before;
    }
    EXPECT_TRUE(handed_over);
  });
  stop = true;
  worker.join();
}

}  // namespace
}  // namespace turnpike::base
