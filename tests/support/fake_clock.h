// A Clock that tests move by hand (never sleeps). Both readings start at fixed values.
#pragma once

#include <atomic>
#include <cstdint>

#include "turnpike/clock.h"

namespace turnpike::testing {

class FakeClock final : public Clock {
 public:
  int64_t MonotonicMs() const override { return monotonic_ms.load(); }
  int64_t WallMs() const override { return wall_ms.load(); }
  // Moves both readings forward.
  void Advance(int64_t ms) {
    monotonic_ms += ms;
    wall_ms += ms;
  }

  std::atomic<int64_t> monotonic_ms{1'000'000};
  std::atomic<int64_t> wall_ms{1'700'000'000'000};  // 2023-11-14T22:13:20Z
};

}  // namespace turnpike::testing
