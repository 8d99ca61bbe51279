#include "base/courtesy.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace turnpike::base {
namespace {

// Calls CourtesyPoint() for `d` of wall time; returns the yields made meanwhile.
uint64_t SpinFor(std::chrono::milliseconds d) {
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

}  // namespace
}  // namespace turnpike::base
