#include "core/loop_clock.h"

#include <limits>

namespace turnpike::core {
namespace {

struct ThreadBinding {
  const uv_loop_t* loop = nullptr;
  uint64_t wall_at = std::numeric_limits<uint64_t>::max();  // loop time of wall_ms
  int64_t wall_ms = 0;
};

thread_local ThreadBinding binding;

}  // namespace

int64_t LoopClock::MonotonicMs() const {
  if (binding.loop == nullptr) return SystemClock::Instance().MonotonicMs();
  return static_cast<int64_t>(uv_now(binding.loop));
}

int64_t LoopClock::WallMs() const {
  if (binding.loop == nullptr) return SystemClock::Instance().WallMs();
  const uint64_t now = uv_now(binding.loop);
  if (now != binding.wall_at) {
    binding.wall_at = now;
    binding.wall_ms = SystemClock::Instance().WallMs();
  }
  return binding.wall_ms;
}

void LoopClock::BindThread(const uv_loop_t* loop) {
  binding = ThreadBinding{};
  binding.loop = loop;
}

LoopClock& LoopClock::Instance() {
  static LoopClock* clock = new LoopClock;
  return *clock;
}

}  // namespace turnpike::core
