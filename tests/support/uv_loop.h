// Running a libuv loop from a test until a condition holds, for tests that drive a component on
// their own loop while fake servers answer from other threads.
#pragma once

#include <uv.h>

#include <chrono>
#include <functional>

namespace turnpike::testing {

// Runs `loop` one pass at a time until `done()` or `limit` passed; whether `done()` held. A timer
// ticking every `tick` makes each pass return even when the loop waits for nothing (nothing
// watched, or only a fake server's thread can make `done()` true); it is closed, and its close
// callback run, before returning. Thread: the loop's; `done` is called between passes.
inline bool RunLoopUntil(uv_loop_t* loop, const std::function<bool()>& done,
                         std::chrono::milliseconds limit, std::chrono::milliseconds tick) {
  uv_timer_t ticker;
  uv_timer_init(loop, &ticker);
  uv_timer_start(
      &ticker, [](uv_timer_t*) {}, tick.count(), tick.count());
  auto deadline = std::chrono::steady_clock::now() + limit;
  bool ok = true;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      ok = false;
      break;
    }
    uv_run(loop, UV_RUN_ONCE);
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&ticker), nullptr);
  uv_run(loop, UV_RUN_NOWAIT);  // the close callback, before `ticker` goes out of scope
  return ok;
}

}  // namespace turnpike::testing
