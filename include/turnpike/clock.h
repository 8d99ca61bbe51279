// Clock: the time a plugin or service reads, injected so that tests never sleep.
//
// Two readings: monotonic milliseconds (for intervals, windows and timeouts: never jumps
// back) and wall-clock milliseconds since the Unix epoch (for what users see: log time
// stamps, `Date`, reset times). Tests pass a fake that they move by hand.
//
// Thread safety: every implementation must be safe to call from any thread at once. The
// system clock costs one clock_gettime() (vDSO, no syscall) per reading and allocates
// nothing, so it may be read on the hot path.
#pragma once

#include <chrono>
#include <cstdint>

namespace turnpike {

class Clock {
 public:
  virtual ~Clock() = default;

  // Milliseconds from an arbitrary fixed origin; never decreases.
  virtual int64_t MonotonicMs() const = 0;
  // Milliseconds since 1970-01-01T00:00:00Z; may jump when the system time is set.
  virtual int64_t WallMs() const = 0;
};

// std::chrono's steady_clock and system_clock.
class SystemClock final : public Clock {
 public:
  int64_t MonotonicMs() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  int64_t WallMs() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  // The process's system clock. Never destroyed (safe to read from any thread until exit).
  static SystemClock& Instance() {
    static SystemClock* clock = new SystemClock;
    return *clock;
  }
};

}  // namespace turnpike
