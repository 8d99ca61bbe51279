#include "core/loop_clock.h"

#include <gtest/gtest.h>
#include <uv.h>

#include <cstdint>
#include <thread>

namespace turnpike::core {
namespace {

// The system clock's readings, through the Clock the unbound LoopClock falls back to.
int64_t SteadyMs() { return SystemClock::Instance().MonotonicMs(); }
int64_t SystemWallMs() { return SystemClock::Instance().WallMs(); }
// Spins until the steady clock reads at least `ms` (a few milliseconds at most here).
void SpinUntilSteady(int64_t ms) {
  while (SteadyMs() < ms) {
  }
}

class LoopClockTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(uv_loop_init(&loop_), 0); }
  void TearDown() override {
    LoopClock::BindThread(nullptr);
    uv_loop_close(&loop_);
  }
  uv_loop_t loop_{};
  const Clock& clock_ = LoopClock::Instance();
};

TEST_F(LoopClockTest, UnboundThreadReadsTheSystemClock) {
  int64_t before = SteadyMs();
  int64_t mono = clock_.MonotonicMs();
  EXPECT_GE(mono, before);
  EXPECT_LE(mono, SteadyMs());
  int64_t wall_before = SystemWallMs();
  int64_t wall = clock_.WallMs();
  EXPECT_GE(wall, wall_before);
  EXPECT_LE(wall, SystemWallMs());
}

TEST_F(LoopClockTest, BoundThreadReadsTheLoopsCachedTime) {
  uv_update_time(&loop_);
  LoopClock::BindThread(&loop_);
  const auto cached = static_cast<int64_t>(uv_now(&loop_));
  // The same clock as steady_clock: the cached time is not ahead of it.
  EXPECT_LE(cached, SteadyMs());
  SpinUntilSteady(cached + 3);
  EXPECT_EQ(clock_.MonotonicMs(), cached);  // no clock read: the turn's time
  uv_update_time(&loop_);
  EXPECT_GE(clock_.MonotonicMs(), cached + 3);
  EXPECT_EQ(clock_.MonotonicMs(), static_cast<int64_t>(uv_now(&loop_)));
}

TEST_F(LoopClockTest, WallTimeIsReadOncePerMillisecondOfLoopTime) {
  uv_update_time(&loop_);
  LoopClock::BindThread(&loop_);
  int64_t before = SystemWallMs();
  int64_t first = clock_.WallMs();
  EXPECT_GE(first, before);
  EXPECT_LE(first, SystemWallMs());
  SpinUntilSteady(static_cast<int64_t>(uv_now(&loop_)) + 3);
  EXPECT_EQ(clock_.WallMs(), first);  // same loop time: the cached reading
  uv_update_time(&loop_);
  int64_t second = clock_.WallMs();
  EXPECT_GE(second, first + 2);  // a new turn: read again (the system clock moved ~3 ms)
  EXPECT_LE(second, SystemWallMs());
}

TEST_F(LoopClockTest, BindingIsPerThreadAndCanBeUndone) {
  uv_update_time(&loop_);
  LoopClock::BindThread(&loop_);
  const auto cached = static_cast<int64_t>(uv_now(&loop_));
  SpinUntilSteady(cached + 3);
  int64_t other = 0;
  std::thread t([&] { other = clock_.MonotonicMs(); });
  t.join();
  EXPECT_GE(other, cached + 3);  // another thread: the system clock, not this loop's
  EXPECT_EQ(clock_.MonotonicMs(), cached);
  LoopClock::BindThread(nullptr);
  EXPECT_GE(clock_.MonotonicMs(), cached + 3);
}

}  // namespace
}  // namespace turnpike::core
