// LazyTimer: a deadline that costs nothing to move later.
//
// Connections re-arm their timeouts on every request (keep-alive idle, send, read). A plain
// uv_timer_start/stop pair per change is two timer-heap operations; here ArmAt() only stores
// the new deadline when the underlying timer is already due no later than it, and the timer,
// when it fires early, re-arms itself for the remaining time. Worker thread only.
#pragma once

#include <uv.h>

#include <cstdint>

namespace turnpike::core {

class LazyTimer {
 public:
  using ExpireFn = void (*)(void* owner);

  // `owner` is passed to `on_expire`, and is the handle's data once Close() was called.
  void Init(uv_loop_t* loop, void* owner, ExpireFn on_expire);

  // Expire at loop time `deadline_ms` (uv_now() scale; one in the past expires at the next
  // loop iteration). REQUIRES: deadline_ms != 0.
  void ArmAt(uint64_t deadline_ms) {
    deadline_ = deadline_ms;
    if (due_ == 0 || due_ > deadline_) Start();  // else it fires in time; OnTimer re-arms
  }
  // The loop time (ms) of the current deadline; 0 = none.
  uint64_t deadline() const { return deadline_; }
  // No deadline. The underlying timer may still fire once, doing nothing.
  void Disarm() { deadline_ = 0; }
  bool armed() const { return deadline_ != 0; }

  // uv_close()s the handle; `cb` receives a handle whose data is the owner.
  void Close(uv_close_cb cb);

 private:
  static void OnTimer(uv_timer_t* t);
  void Start();  // the uv timer at deadline_

  uv_timer_t timer_{};
  void* owner_ = nullptr;
  ExpireFn on_expire_ = nullptr;
  uint64_t deadline_ = 0;  // loop time (ms) when the owner's timeout expires; 0 = none
  uint64_t due_ = 0;       // loop time (ms) the uv timer is set for; 0 = not running
};

}  // namespace turnpike::core
