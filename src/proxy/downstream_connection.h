// DownstreamConnection: one HTTP/1.1 client connection (Envoy's connection manager, minus
// the streams): the socket (core::TcpConnection), the read buffer, finding request heads in
// it, keep-alive, pipelining, the lingering close and drain. Each request on it is an
// Exchange, lent by the worker from the first complete head to the end of its response;
// requests are handled one at a time, so pipelined responses come back in order.
//
// The read buffer is lent by the worker too (an idle keep-alive connection holds neither it
// nor an exchange). While an exchange runs, its head stays where it was read (the request's
// views point into it) and body bytes are read after it; the exchange consumes them through
// unread() / Consume().
//
// Worker thread only. Freed in its uv_close callback.
#pragma once

#include <uv.h>

#include <cstdint>
#include <string_view>

#include "core/tcp_connection.h"
#include "proxy/request_context.h"
#include "proxy/snapshot.h"
#include "proxy/worker.h"

namespace turnpike::proxy {

class Exchange;

class DownstreamConnection final : core::TcpConnection::Handler {
 public:
  static constexpr size_t kInitialBuffer = Worker::kClientBufferSize;
  static constexpr size_t kMaxRequestLine = 8 * 1024;  // longer: 414
  static constexpr size_t kMaxHead = 32 * 1024;        // longer: 431

  // Accepts a pending connection on `server`. Returns nullptr when accept fails.
  static DownstreamConnection* Accept(Worker* worker, uv_stream_t* server);

  // Drain: closes the connection if it is between requests, else after the current response.
  void Drain();
  // Closes at once (the client went away, a fatal error, or the drain deadline passed).
  void Close();

  size_t worker_index = 0;  // position in the worker's client list (worker use only)

  // ---- for the exchange in progress ----
  // Input not consumed yet (body bytes, or the next request's).
  std::string_view unread() const { return std::string_view(buf_ + begin_, end_ - begin_); }
  void Consume(size_t n) { begin_ += n; }
  void StartReading() {
    if (state_ != State::kClosed) conn_.StartReading();
  }
  void StopReading() { conn_.StopReading(); }
  // The connection's one timer (client_body_timeout while a body is read); expiry closes.
  void ArmTimer(double seconds) { conn_.ArmTimer(seconds); }
  void DisarmTimer() { conn_.DisarmTimer(); }
  // Whether the connection stays open after the current exchange.
  void set_keep_alive(bool keep_alive) { keep_alive_ = keep_alive; }
  bool keep_alive() const { return keep_alive_; }
  // "HTTP/1.1 100 Continue", before any response write of the request.
  void SendContinue();
  // Writes the response bytes `bufs` (valid until Exchange::OnWritten); tried synchronously
  // first, so the completion may run inside this call.
  void Write(uv_buf_t* bufs, unsigned count);
  // The exchange ended (its log phase ran, it dropped its pins): the next request, buffered
  // already or awaited, or the lingering close. The exchange may be reused inside.
  void EndExchange();

  const ConnectionInfo& info() const { return conn_info_; }
  std::string_view peer_ip() const { return peer_.ip; }
  std::string_view local_port() const { return local_.port; }
  // Whether the peer is in real_ip_from / trusted_addresses of `snap`: the peer never
  // changes, so this is worked out once per snapshot version, not per request.
  void RefreshPeerRules(const Snapshot& snap) {
    if (peer_rules_version_ != snap.version) ComputePeerRules(snap);
  }
  bool peer_real_ip_from() const { return peer_real_ip_from_; }
  bool peer_trusted() const { return peer_trusted_; }

 private:
  enum class State : uint8_t {
    kReadingHead,  // waiting for (the rest of) a request head
    kExchange,     // a request is in progress (the exchange's own state says where)
    kLingering,    // response sent, discarding input before closing
    kClosed,
  };

  explicit DownstreamConnection(Worker* worker);
  ~DownstreamConnection();

  // core::TcpConnection::Handler: the client socket's events
  void OnReadBuffer(size_t suggested, uv_buf_t* buf) override;
  void OnRead(char* data, size_t len) override;
  void OnReadBufferUnused(const uv_buf_t& buf) override;
  void OnReadEnd(int status) override;
  void OnWritten(int status) override;
  void OnWriteTimeout() override;
  void OnShutdown(int status) override;
  void OnTimeout() override;
  void OnClosed() override;

  void ProcessHead();
  void StartExchange(size_t head_len);
  void RejectHead(int status);
  void NextRequest();
  void LingerAndClose();
  void Compact();
  bool Grow(size_t new_cap);
  void ComputePeerRules(const Snapshot& snap);

  // The request in progress, lent by the worker (AcquireExchange / ReleaseExchange).
  void AcquireExchange();
  void ReleaseExchange();
  void ReleaseBufferIfIdle();
  void FreeBuffer();

  core::TcpConnection conn_;  // the socket, its write path and the connection's timer
  Worker* worker_;
  State state_ = State::kReadingHead;
  bool head_deadline_set_ = false;  // client_header_timeout runs for the head being read
  // "100 Continue" is being written; a response write waits for it (deferred_bufs_ set).
  bool continue_inflight_ = false;
  uv_buf_t* deferred_bufs_ = nullptr;
  unsigned deferred_count_ = 0;

  // Read buffer: unconsumed bytes are [begin_, end_).
  char* buf_ = nullptr;
  size_t cap_ = 0;
  size_t begin_ = 0;
  size_t end_ = 0;
  size_t scan_pos_ = 0;
  size_t head_end_ = 0;  // end of the current request head (its views must stay put)

  core::AddressText peer_;   // the client's address
  core::AddressText local_;  // the listener's address it connected to
  ConnectionInfo conn_info_;
  bool keep_alive_ = true;  // the connection stays open after the current exchange
  uint64_t peer_rules_version_ = UINT64_MAX;
  bool peer_real_ip_from_ = false;
  bool peer_trusted_ = false;

  Exchange* x_ = nullptr;
};

}  // namespace turnpike::proxy
