// TcpProbe: one active TCP health probe (checks.active.type: tcp): connect to
// the target within the timeout, then close. Success when the connection opens;
// a refused or failed connect is a TCP failure, no answer within the timeout a
// timeout (lua-resty-healthcheck's run_single_check).
//
// Heap-allocated and self-freeing: Start() returns the probe, which calls
// `done` once (unless Cancel()ed first) and frees itself after its handles
// closed. Cancel() after `done` ran is not allowed (the probe may be gone): the
// owner forgets the pointer in `done`.
//
// Thread rules: the loop's thread only.
#pragma once

#include <uv.h>

#include <functional>

#include "upstream/health_state.h"

namespace turnpike::health {

class TcpProbe {
 public:
  using Done = std::function<void(upstream::Outcome)>;

  // Starts a connect to `addr`; null (and no callback) when it cannot even
  // start, after
  // `*outcome` was set to the failure to report.
  static TcpProbe* Start(uv_loop_t* loop, const sockaddr* addr, double timeout_s, Done done,
                         upstream::Outcome* outcome);
  // Drops the probe: no callback follows.
  void Cancel();

 private:
  TcpProbe() = default;
  void Finish(upstream::Outcome outcome);
  void Close();
  static void OnClosed(uv_handle_t* h);

  uv_tcp_t tcp_{};
  uv_connect_t connect_{};
  uv_timer_t timer_{};
  Done done_;
  int open_handles_ = 0;
  bool closing_ = false;
};

}  // namespace turnpike::health
