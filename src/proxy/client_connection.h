// ClientConnection: one downstream HTTP/1.1 connection and the exchange in progress on it.
//
// The life of a request (ARCHITECTURE.md): read the head, parse it (http/), match a route on
// the pinned snapshot (router/), pick a node and an upstream connection (upstream/, pool),
// then stream the request body up and the response down with back-pressure: while a write to
// one side is in flight, reading from the other side is paused, and the bytes being written
// stay in the reader's buffer (no copies). Requests on one connection are handled one at a
// time, so pipelined responses come back in order.
//
// Worker thread only. Freed in its uv_close callback.
#pragma once

#include <uv.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/tcp_connection.h"
#include "http/message.h"
#include "http/parser.h"
#include "proxy/exchange.h"
#include "proxy/request_context.h"
#include "proxy/snapshot.h"
#include "proxy/upstream_connection.h"
#include "proxy/worker.h"
#include "router/route_table.h"
#include "upstream/round_robin.h"

namespace turnpike::proxy {

class ClientConnection final : public router::RouteFilter,
                               public Pausable,
                               public UpstreamConnection::Owner,
                               core::TcpConnection::Handler {
 public:
  static constexpr size_t kInitialBuffer = Worker::kClientBufferSize;
  static constexpr size_t kMaxRequestLine = 8 * 1024;  // longer: 414
  static constexpr size_t kMaxHead = 32 * 1024;        // longer: 431

  // Accepts a pending connection on `server`. Returns nullptr when accept fails.
  static ClientConnection* Accept(Worker* worker, uv_stream_t* server);

  // Drain: closes the connection if it is between requests, else after the current response.
  void Drain();
  // Closes at once (abort, or drain deadline passed).
  void Close();

  // ---- UpstreamConnection::Owner: events from the upstream side (forward.cc) ----
  void OnUpstreamConnected(int status) override;
  void OnUpstreamData() override;
  void OnUpstreamEof(int status) override;
  void OnUpstreamWritten(int status) override;
  void OnUpstreamTimeout() override;

  size_t worker_index = 0;  // position in the worker's client list (worker use only)

  // router::RouteFilter: a candidate route's remote_addrs and vars.
  bool Accept(uint32_t payload, const router::PathParams& params) override;

  // Pausable: a plugin paused the request phases of the current request.
  PluginContext& paused_context() override { return x_->ctx; }
  void ResumeFromPause() override;

 private:
  enum class State : uint8_t {
    kReadingHead,  // waiting for (the rest of) a request head
    kReadingBody,  // reading a form body before routing (post_arg_*), see StartReadingBody
    kPaused,       // a rewrite/access plugin waits for its I/O (input stays buffered)
    kProxying,     // exchange with an upstream in progress
    kLocalReply,   // writing a response Turnpike generated itself
    kLingering,    // response sent, discarding input before closing
    kClosed,
  };

  explicit ClientConnection(Worker* worker);
  ~ClientConnection();
  std::string_view ResolveRemoteAddr() const;

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

  // downstream side (client_connection.cc)
  void StartReading();
  void StopReading() { conn_.StopReading(); }
  void ArmTimer(double seconds) { conn_.ArmTimer(seconds); }
  void OnData();
  void ProcessHead();
  void HandleRequest(size_t head_len);
  void BeginUnroutedRequest(size_t head_len);
  void RouteRequest();
  void SendContinue();
  void StartReadingBody();
  void ReadBody();
  void ReleaseBodyBuffer();
  bool SkipRequestBody();
  void ReplyLocal(int status, std::string_view message);
  void SendLocal(int status, std::string_view body, std::string_view content_type);

  // plugin phases (phases.cc)
  // rewrite + access, from the start (resume: from where a pause left off); then on to the
  // upstream or the plugin's answer, or into kPaused.
  void RunRequestPhases(bool resume);
  void ForwardToUpstream();  // after the request phases
  void RunHeaderFilters(int status);
  uint32_t active_phases() const;  // phases of the global rules and the matched route
  bool body_filters_active() const;
  // Runs one body piece through the body filters; appends the result to `out`. Returns true
  // when a filter ended the body.
  bool FilterBody(std::string_view data, bool first, bool last, std::string* out);
  // The log phase: the plugins' log hooks, then the access log (proxy/access_log.h).
  void RunLogPhase();
  // The status of every upstream attempt so far (X-APISIX-Upstream-Status).
  std::span<const uint16_t> UpstreamStatuses() const {
    return {x_->attempt_status.data(), std::min<size_t>(x_->attempts, x_->attempt_status.size())};
  }
  // Ends the exchange: the log phase, the upstream connection back to the pool when
  // `upstream_reusable` (else closed), then the next request or the close.
  void FinishExchange(bool upstream_reusable = false);
  void NextRequest();
  void LingerAndClose();
  // Writes client_bufs (the completion may run inside: see TcpConnection::Write).
  void WriteClient();
  void OnClientWriteDone(int status);
  // A response write is in flight (not the "100 Continue" one).
  bool response_writing() const { return conn_.writing() && !continue_inflight_; }
  void Compact();
  bool Grow(size_t new_cap);

  // upstream side (forward.cc)
  // The route's timeouts when it has its own, else the upstream's.
  const config::Timeout& timeouts() const {
    return x_->route->has_timeout ? x_->route->timeout : x_->upstream->timeout;
  }
  void StartAttempt();
  void ReportAttempt(const upstream::Node& node);
  std::string_view UpstreamHost(const upstream::Node& node) const;
  // Ends the request's plugin states and drops what the exchange pins (worker states,
  // snapshot, node set): between requests and at close.
  void ReleasePins() {
    x_->ctx.EndRequest();
    x_->worker_states.reset();  // before the snapshot, which keeps their plugins alive
    x_->snapshot.reset();
    x_->nodes.reset();
  }
  void ConnectNode(bool fresh);
  void SendRequestHead();
  void EncodeRequestHead(std::string* out, const upstream::Node& node);
  void AppendBufferedBody();
  int AppendRequestBody();
  void ForwardRequestBody();
  void ProcessResponse();
  void EncodeResponseHead();
  bool AppendResponseBody();
  void OnResponseWritten();
  void FailAttempt(int status, bool connect_phase);
  void ReleaseUpstream(bool reusable);
  void AbortExchange();

  core::TcpConnection conn_;  // the socket, its write path and the connection's timer
  Worker* worker_;
  State state_ = State::kReadingHead;
  bool head_deadline_set_ = false;  // client_header_timeout runs for the head being read
  // "100 Continue" is being written; a response write waits for it (write_deferred_).
  bool continue_inflight_ = false;
  bool write_deferred_ = false;

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
  uint32_t requests_ = 0;
  bool keep_alive_ = true;  // the connection stays open after the current exchange
  // The peer never changes, so whether it is in real_ip_from / trusted_addresses is worked
  // out once per snapshot version, not per request.
  uint64_t peer_rules_version_ = UINT64_MAX;
  bool peer_real_ip_from_ = false;
  bool peer_trusted_ = false;
  void RefreshPeerRules();

  // The request in progress, lent by the worker from the first byte of a head to the end of
  // its exchange (AcquireExchange / ReleaseExchange): an idle keep-alive connection holds
  // neither it nor a read buffer.
  Exchange* x_ = nullptr;
  void AcquireExchange();
  void ReleaseExchange();
  void ReleaseBufferIfIdle();
  void FreeBuffer();
};

}  // namespace turnpike::proxy
