// LoopClock: the Clock plugins and services read, answering from a worker loop's cached time
// on a worker thread, as nginx answers ngx.now() from the time it caches once per event-loop
// turn.
//
// A request read the system clock twice (steady and wall, ~30 ns each through the vDSO on
// these VMs); the worker's loop already holds the time its turn began (uv_now: libuv reads
// CLOCK_MONOTONIC after every epoll_wait). On a thread bound to a loop (BindThread, the
// worker's first act), MonotonicMs() is that loop's uv_now() (the same clock as
// std::chrono::steady_clock, in whole milliseconds, behind the true time by at most the
// turn's own run), and WallMs() reads the system clock once per millisecond of loop time and
// repeats it after. On any other thread (control, tests) both are the system clock's.
//
// What a caller sees: monotonic time never decreases on one thread; across threads a
// worker's reading may trail another thread's by its turn's length (a few milliseconds at
// worst), as between nginx workers. Wall time may jump as the system clock does.
//
// Thread safety: any thread; the binding and the wall cache are thread-local.
#pragma once

#include <uv.h>

#include <cstdint>

#include "turnpike/clock.h"

namespace turnpike::core {

class LoopClock final : public Clock {
 public:
  int64_t MonotonicMs() const override;
  int64_t WallMs() const override;

  // From now on this thread's readings come from `loop` (the caller's own loop, which must
  // outlive the binding); null unbinds.
  static void BindThread(const uv_loop_t* loop);

  // The process's instance. Never destroyed.
  static LoopClock& Instance();
};

}  // namespace turnpike::core
