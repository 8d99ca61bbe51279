// Internals of http_client::Client: Conn (one TCP connection) and Call (one request).
//
// A Call is attached to at most one Conn at a time (`conn` / `Conn::call`); a Conn without a
// call is idle in the client's pool. User callbacks run only from Call; on_done runs after the
// Call is freed, on_head and on_body through Notify(), which tells whether the callback
// cancelled the call. A Conn lives until its OnClosed (core::TcpConnection's rule), so code up
// the stack may touch it after any callback; `Conn::client` is null once the client closed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/tcp_connection.h"
#include "http/message.h"
#include "http/parser.h"
#include "http_client/client.h"

namespace turnpike::http_client {

class Conn final : public core::TcpConnection::Handler {
 public:
  Conn(Client* client, const Origin& origin);

  void ReleaseBuffer();  // gives the read buffer back to the client's pool
  std::string_view pending() const { return std::string_view(buf + begin, end - begin); }
  void Consume(size_t n) { begin += n; }
  bool buffer_full() const { return buf != nullptr && begin == 0 && end == buffer_size; }

  // core::TcpConnection::Handler
  void OnConnect(int status) override;
  void OnReadBuffer(size_t suggested, uv_buf_t* buf) override;
  void OnRead(char* data, size_t len) override;
  void OnReadBufferUnused(const uv_buf_t& buf) override;
  void OnReadEnd(int status) override;
  void OnWritten(int status) override;
  void OnWriteTimeout() override;
  void OnTimeout() override;
  void OnClosed() override;

  Client* client;
  Origin origin;
  core::TcpConnection tcp;
  Call* call = nullptr;
  char* buf = nullptr;
  size_t buffer_size;
  size_t begin = 0, end = 0;
  uint32_t requests = 0;  // requests started on this connection
  // What a call still attached when the connection closes fails with.
  Error close_error = Error::kConnectionClosed;
  int close_uv_error = 0;
};

class Call {
 public:
  Call(Client* client, const Origin& origin, Request request, Callbacks callbacks);
  ~Call();

  void Attach(Conn* conn);
  void Send();     // the request on `conn` (connected)
  void Process();  // response bytes in conn->pending()
  void OnWritten(int status);
  void OnEof(int status);
  void Fail(Error error, int uv_error = 0);      // closes the connection, then Finish
  void Finish(Error error, int uv_error);        // on_done after freeing this call
  void Cancel();                                 // no callback; closes the connection
  std::string& head_out() { return head_out_; }  // the encoded request head

  Client* client;
  Origin origin;
  Request request;
  Callbacks cb;
  RequestHandle* handle = nullptr;
  Conn* conn = nullptr;
  Error deferred_error = Error::kNone;  // for Client::Defer

 private:
  // Runs a user callback; false when it cancelled (freed) this call.
  template <typename F>
  bool Notify(F&& f) {
    bool destroyed = false;
    destroyed_ = &destroyed;
    f();
    if (destroyed) return false;
    destroyed_ = nullptr;
    return true;
  }
  bool ProcessHead();  // false: stop processing (waiting, failed or cancelled)
  void Complete();     // the whole response is in
  bool CanRetryStale() const;
  void RetryFresh();
  void DetachConn(bool close);

  std::string head_out_;
  uv_buf_t bufs_[2] = {};
  http::ResponseParser parser_;
  http::ResponseHead head_;
  std::vector<std::string_view> spans_;
  size_t scan_pos_ = 0;
  Result result_;
  bool* destroyed_ = nullptr;
  bool head_done_ = false;
  bool received_any_ = false;  // a response byte arrived on the current connection
  bool stale_retry_used_ = false;
};

}  // namespace turnpike::http_client
