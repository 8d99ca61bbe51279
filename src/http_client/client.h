// Client: HTTP/1.1 requests from the control thread to registries, etcd and health probes.
//
// For the coming discovery providers (Consul blocking queries, Nacos polling, Kubernetes watch
// streams), etcd and active health checks. It takes resolved addresses (Origin: no DNS here)
// and runs on whatever loop it is given. Each request is one Fetch():
//
//   http_client::Request req;
//   req.target = "/v1/health/service/web?index=" + index + "&wait=60s";
//   req.read_timeout = 70;  // above the server's wait
//   handle_ = client_.Fetch(consul_, std::move(req), [this](http_client::Result r) {
//     if (!r.ok()) { /* r.error, ErrorName(r.error); keep the last known nodes */ return; }
//     Parse(r.response.body, r.response.Header("X-Consul-Index"));
//   });
//
// Two modes. Whole-body mode (no Callbacks::on_body): the body is collected up to
// Request::max_body_size and comes with on_done. Streaming mode (on_body set): every decoded
// body piece (chunk framing removed) goes to on_body as it arrives, for watches and long polls
// that never end or end late; on_done then says how the stream ended.
//
// Framing: Content-Length, chunked and close-delimited bodies, 1xx interim answers skipped,
// with the proxy's strict rules (http::ResponseParser: CRLF only, one Transfer-Encoding of
// `chunked`, three-digit status, ...). A malformed response is kMalformedResponse and its
// connection is closed.
//
// Connections: one request per connection at a time, kept alive per origin (up to
// ClientOptions::max_idle_per_origin idle ones, closed after idle_timeout, or as soon as the
// server sends a byte or closes). A request sent on a pooled connection that the server had
// closed meanwhile (no byte of an answer came) is sent once more on a new connection when its
// method is idempotent (GET, HEAD, OPTIONS, PUT, DELETE). The read buffer is lent from a
// pool while bytes are being handled, so an idle or quiet connection holds none.
//
// Cancellation: dropping (or Cancel()ing) the RequestHandle ends the request: no callback
// follows and its connection is closed. That is also how a caller gives up on a long poll
// when it stops.
//
// Thread rules: everything (constructor, Fetch, handles, destructor, every callback) on the
// thread of the loop given to the constructor. Callbacks never run inside Fetch(). Inside any
// callback the caller may Fetch, drop handles, Close() the client or destroy it.
#pragma once

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "core/buffer_pool.h"
#include "http_client/request.h"

namespace turnpike::http_client {

class Call;
class Conn;
class Client;

struct Callbacks {
  // Optional: the response head (status and headers; body empty), before any body piece.
  std::function<void(const Response& head)> on_head;
  // Set: streaming mode. A piece of the decoded body, valid during the call only.
  std::function<void(std::string_view piece)> on_body;
  // Exactly once per request unless its handle was dropped first.
  std::function<void(Result result)> on_done;
};

// The caller's hold on a request in flight. Move-only; destroying it cancels the request.
class RequestHandle {
 public:
  RequestHandle() = default;
  ~RequestHandle() { Cancel(); }
  RequestHandle(RequestHandle&& o) noexcept;
  RequestHandle& operator=(RequestHandle&& o) noexcept;
  RequestHandle(const RequestHandle&) = delete;
  RequestHandle& operator=(const RequestHandle&) = delete;

  // Ends the request now: no callback follows, its connection is closed. Idempotent.
  void Cancel();
  // The request is in flight (on_done has not run and it was not cancelled).
  bool active() const { return call_ != nullptr; }

 private:
  friend class Call;
  friend class Client;
  Call* call_ = nullptr;
};

struct ClientOptions {
  size_t buffer_size = 16 * 1024;  // read buffer; a response head must fit in it (kTooLarge)
  size_t max_idle_per_origin = 4;  // kept-alive connections waiting per origin
  double idle_timeout = 30;        // seconds a kept-alive connection waits for a request
};

class Client {
 public:
  Client(uv_loop_t* loop, ClientOptions options = {});
  // Close()s. The loop must run afterwards for the connections' close callbacks (they free
  // themselves without touching the client).
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends `request` to `origin`. REQUIRES: Close() was not called.
  [[nodiscard]] RequestHandle Fetch(const Origin& origin, Request request, Callbacks callbacks);
  [[nodiscard]] RequestHandle Fetch(const Origin& origin, Request request,
                                    std::function<void(Result)> on_done);

  // Closes every connection; requests in flight end without a callback (their handles go
  // inactive). Idempotent.
  void Close();

  // For tests and metrics.
  size_t open_connections() const { return conns_.size(); }
  size_t idle_connections() const { return idle_.size(); }
  uint64_t connects() const { return connects_; }
  const ClientOptions& options() const { return options_; }

 private:
  friend class Call;
  friend class Conn;

  // A connection for `call`: an idle one to its origin, else a new one (`fresh`: always new).
  void Start(Call* call, bool fresh);
  Conn* TakeIdle(const Origin& origin);
  void PutIdle(Conn* conn);  // or closes it when the origin has enough idle ones
  void RemoveIdle(Conn* conn);
  void Forget(Conn* conn);  // the connection closed
  void Forget(Call* call);  // the call ended
  void Defer(Call* call);   // fails `call` on the next loop iteration (invalid request)
  static void OnDeferred(uv_timer_t* t);

  uv_loop_t* loop_;
  ClientOptions options_;
  core::BufferPool buffers_;
  std::vector<Conn*> conns_;  // every open connection
  std::vector<Conn*> idle_;   // kept alive, no request (most recent last)
  std::vector<Call*> calls_;  // every request in flight
  std::vector<Call*> deferred_;
  uv_timer_t* defer_timer_;  // heap: freed in its close callback, after the client may be gone
  uint64_t connects_ = 0;
  bool closed_ = false;
  bool in_fetch_ = false;  // Fetch() is on the stack: failures are delivered later
};

}  // namespace turnpike::http_client
