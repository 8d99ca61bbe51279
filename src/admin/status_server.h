// StatusServer: the `apisix.status` listener (`/status`, `/status/ready`), served by the
// control thread's own loop, never by a worker, so it answers even when workers are busy.
//
// Deliberately small: HTTP/1.1 with keep-alive, one request at a time per connection
// (pipelined requests wait in the buffer), no request bodies. A malformed request, an
// oversized head or a request with a body gets an error answer and the connection closes.
// Idle connections close after kIdleTimeoutMs, and at most kMaxConnections are open. Each
// connection is a core::TcpConnection (its own lazy timer is the idle and linger timeout).
//
// Thread rules: everything runs on the loop given to the constructor (control thread).
#pragma once

#include <uv.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "admin/status_api.h"
#include "config/specs.h"
#include "turnpike/status.h"

namespace turnpike::admin {

class StatusServer {
 public:
  // Answers one request: method and path (without the query string).
  using Handler = std::function<HttpAnswer(base::Method method, std::string_view path)>;

  static constexpr size_t kMaxConnections = 64;
  static constexpr size_t kMaxHead = 8 * 1024;
  static constexpr uint64_t kIdleTimeoutMs = 10'000;

  // `report` is called for every request that needs the daemon's state.
  StatusServer(uv_loop_t* loop, std::function<StatusReport()> report);
  // The same server answering through `handler` (the prometheus exporter).
  StatusServer(uv_loop_t* loop, Handler handler);
  // REQUIRES: Close() was called and the loop has run its close callbacks (or Listen() was
  // never successful).
  ~StatusServer();
  StatusServer(const StatusServer&) = delete;
  StatusServer& operator=(const StatusServer&) = delete;

  // Binds and listens on `addr`. An error names the address (e.g. "address in use").
  Status Listen(const config::ListenAddr& addr);
  // The bound port (useful when port 0 was requested); 0 before Listen().
  int port() const { return port_; }
  // Stops listening and closes every connection. Idempotent.
  void Close();

 private:
  struct Conn;
  static void OnConnection(uv_stream_t* server, int status);
  void Forget(Conn* conn);

  uv_loop_t* loop_;
  Handler handler_;
  uv_tcp_t listener_{};
  bool listening_ = false;  // listener_ initialised
  bool closed_ = false;
  int port_ = 0;
  std::vector<Conn*> conns_;
};

}  // namespace turnpike::admin
