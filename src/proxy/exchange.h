// Exchange: one request on a downstream connection, from its parsed head to the end of its
// response (Envoy's connection manager's active stream): the pinned snapshot, the request
// context and facts, routing, the plugin phases, Turnpike's own answers, the response sent to
// the client (head encoding, body filters, re-framing) and the log phase. The upstream half is
// its UpstreamRequest, which reports back through UpstreamRequest::Callbacks.
//
// Lent by the worker to a DownstreamConnection when a request starts and taken back when the
// connection goes idle (Worker::TakeExchange / ReturnExchange), so an idle keep-alive
// connection costs little memory. Strings and vectors keep their capacity across requests,
// so a warm worker allocates nothing per request.
//
// The steps, in order (docs/architecture.md, "The life of a request"):
//   Start          parse the head, normalize the path, pin the snapshot, real IP
//   ReadBody       (a form body the snapshot needs before routing: post_arg_*)
//   RouteRequest   the route table with this exchange as its filter (remote_addrs, vars)
//   RunRequestPhases  rewrite + access (may pause, or answer)
//   ForwardToUpstream the upstream request; the body streams up as the client sends it
//   OnResponse     header_filter + body_filter on the node's answer, then to the client
//   FinishExchange log phase and access log, upstream back to the pool, next request
//
// Worker thread only; owned by the worker's pool or by the one connection it is lent to.
#pragma once

#include <uv.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "http/message.h"
#include "http/parser.h"
#include "http/response_encoder.h"
#include "proxy/pause_table.h"
#include "proxy/phase_runner.h"
#include "proxy/request_context.h"
#include "proxy/snapshot.h"
#include "proxy/tunnel.h"
#include "proxy/upstream_request.h"
#include "proxy/worker.h"
#include "proxy/worker_states.h"
#include "router/route_table.h"

namespace turnpike::proxy {

class DownstreamConnection;

class Exchange final : public router::RouteFilter,
                       public Pausable,
                       UpstreamRequest::Callbacks,
                       Tunnel::Callbacks {
 public:
  explicit Exchange(Worker* worker);
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  // ---- from the downstream connection ----
  // Lent to `down` (until the connection gives it back).
  void Attach(DownstreamConnection* down) { down_ = down; }
  // A complete request head of `head_len` bytes at `head`, in the connection's read buffer,
  // where it stays put until the exchange ends (the request's views point into it).
  void Start(const char* head, size_t head_len);
  // A head that cannot be parsed because it is too long (414 request line, 431 head; `read`
  // bytes of it so far): answered from a blank request.
  void Reject(int status, size_t read);
  // The connection read more bytes: request body, the next request (left buffered), or a
  // tunnel's.
  void OnData();
  // The client closed its side or the connection failed. Returns true when the exchange
  // handles it (a tunnel flushes what the client sent, then ends); false: the connection
  // closes (Abort).
  bool OnClientEnd(int status);
  // The connection's write of client_bufs_ finished (0, or a libuv error).
  void OnWritten(int status);
  // The connection closes in the middle of the exchange: a pause is cancelled, the upstream
  // connection closed, the pins dropped. Nothing of the exchange runs after this.
  void Abort();
  // Gives back what a finished or aborted request still holds (the upstream connection, to
  // the pool when `upstream_reusable`; the body buffer; the pins): at the end of every
  // exchange, and before it goes back to the worker or is destroyed with its connection.
  // Idempotent.
  void Release(bool upstream_reusable = false);
  // Unread input may go back to just after the head: a body is being read and no upstream
  // write refers to it.
  bool input_movable() const {
    return state_ == State::kReadingBody ||
           (state_ == State::kProxying && !upstream_.body_inflight()) ||
           state_ == State::kUpgrading ||
           (state_ == State::kTunnel && !tunnel_.client_bytes_inflight());
  }

  // ---- router::RouteFilter: a candidate route's remote_addrs and vars ----
  bool Accept(uint32_t payload, const router::PathParams& params) override;

  // ---- Pausable: a plugin paused the request phases ----
  PluginContext& paused_context() override { return ctx_; }
  void ResumeFromPause() override;

 private:
  enum class State : uint8_t {
    kIdle,
    kReadingBody,  // reading a form body before routing (post_arg_*), see StartReadingBody
    kPaused,       // a rewrite/access plugin waits for its I/O (input stays buffered)
    kProxying,     // the upstream request is in progress
    kLocalReply,   // writing a response Turnpike generated itself
    kUpgrading,    // writing the node's 101 to the client; then kTunnel
    kTunnel,       // relaying an upgraded connection (tunnel_)
  };

  // ---- UpstreamRequest::Callbacks ----
  int EncodeRequest(const upstream::Node& node, std::string_view host,
                    std::vector<uv_buf_t>* bufs) override;
  void OnRequestWritten() override;
  bool OnResponse(UpstreamRequest::ResponsePiece& piece) override;
  void OnResponseComplete() override;
  void OnRequestFailed(int status) override;
  void OnResponseBroken() override;

  // ---- upgrades (websocket): the 101 went to the client, the tunnel takes over ----
  // The Upgrade value of an upgrade request this route lets through, else empty.
  std::string_view UpgradeRequested() const;
  void StartTunnel();
  void OnTunnelEnd() override;  // Tunnel::Callbacks

  // The request, before the upstream (exchange.cc)
  void BeginRequest();
  void BeginUnroutedRequest(size_t head_len);
  std::string_view ResolveRemoteAddr() const;
  void StartReadingBody();
  void ReadBody();
  void ReleaseBodyBuffer();
  bool SkipRequestBody();
  void RouteRequest();
  void ForwardToUpstream();
  void SendContinue();
  // The request body for the upstream: the part read before routing (every attempt sends it
  // again), then what the client sent since, framed as the client's. 0, or 400/413.
  void AppendBufferedBody(std::vector<uv_buf_t>* bufs);
  int AppendRequestBody(std::vector<uv_buf_t>* bufs);
  void ForwardRequestBody();
  void EncodeRequestHead(std::string_view host, std::string* out);

  // The plugin phases (exchange_phases.cc). rewrite + access from the start (resume: from
  // where a pause left off); then on to the upstream or the plugin's answer, or kPaused.
  void RunRequestPhases(bool resume);
  void RunHeaderFilters(int status);
  bool body_filters_active() const { return phases_.has(kPhaseBodyFilter); }
  // Runs one body piece through the body filters; appends the result to `out`. Returns true
  // when a filter ended the body.
  bool FilterBody(std::string_view data, bool first, bool last, std::string* out) {
    return phases_.FilterBody(ctx_, data, first, last, out);
  }
  // The log phase: the plugins' log hooks, then the access log (proxy/access_log.h).
  void RunLogPhase();

  // The response (exchange.cc)
  void ReplyLocal(int status, std::string_view message);
  void SendLocal(int status, std::string_view body, std::string_view content_type);
  void EncodeResponseHead(const http::ResponseHead& r);
  // Writes client_bufs_ (the completion may run inside: callers must not touch the exchange
  // after it returns).
  void WriteClient();
  // Ends the exchange: the log phase, the upstream request's Finish (the connection back to
  // the pool when `upstream_reusable`), then the connection's next request or close. The
  // exchange may be reused or gone when it returns.
  void FinishExchange(bool upstream_reusable);
  // Ends the request's plugin states and drops what it pins (worker states, snapshot).
  void ReleasePins() {
    if (in_flight_) {
      in_flight_ = false;
      worker_->mutable_stats().requests_in_flight.fetch_sub(1, std::memory_order_relaxed);
    }
    ctx_.EndRequest();
    worker_states_.reset();  // before the snapshot, which keeps their plugins alive
    snapshot_.reset();
  }
  // The route's timeouts when it has its own, else the upstream's.
  const config::Timeout& timeouts() const {
    return route_->has_timeout ? route_->timeout : upstream_conf_->timeout;
  }
  bool resp_chunked() const { return resp_framing_ == http::BodyFraming::kChunked; }

  Worker* const worker_;
  DownstreamConnection* down_ = nullptr;
  State state_ = State::kIdle;

  RequestContext ctx_;
  PhaseRunner phases_;              // the plugin chains of this request
  bool phases_ran_ = false;         // rewrite/access ran for this request (log then runs)
  bool in_flight_ = false;          // counted in WorkerStats::requests_in_flight
  bool in_request_phases_ = false;  // a rewrite/access hook is running (see ResumeFromPause)
  bool resume_pending_ = false;     // that hook's pause was resumed before it returned
  uint64_t start_ms_ = 0;           // loop time the head was complete
  uint64_t bytes_sent_ = 0;         // bytes written to the client
  int resp_status_ = 0;             // status sent

  http::RequestParser parser_;
  http::RequestHead req_;
  std::string host_;                 // lowercased Host without port (reused buffer)
  std::string uri_scratch_;          // normalized path when the raw one is not normal
  std::string_view uri_;             // nginx's $uri: the path routes match on
  std::string_view remote_addr_;     // client address after real-IP processing
  router::MatchInfo match_info_;     // which patterns of the route matched
  SnapshotConstSharedPtr snapshot_;  // pinned for the whole exchange
  WorkerStatePin worker_states_;     // this worker's plugin states of `snapshot_`, pinned with it
  const Route* route_ = nullptr;
  const Upstream* upstream_conf_ = nullptr;
  UpstreamRequest upstream_;
  std::string_view upgrade_;  // the client's Upgrade, when forwarded (websocket route)
  Tunnel tunnel_;             // the upgraded connection, in kTunnel

  bool req_body_done_ = false;  // the whole request body was read from the client
  uint64_t body_bytes_ = 0;     // request body bytes so far (client_max_body_size)
  // How the client's response body is delimited: kChunked when Turnpike re-chunks it,
  // kUntilClose for an HTTP/1.0 client whose body ends at close.
  http::BodyFraming resp_framing_ = http::BodyFraming::kContentLength;

  // Write scratch (capacity reused between requests: no allocation once warm).
  std::string out_;                      // response head / local reply head
  std::string local_body_;               // body of a local reply
  std::string filtered_;                 // filtered body bytes of the write in flight
  std::string up_request_head_;          // the request head sent upstream
  std::vector<std::string_view> spans_;  // request body spans from the parser
  std::vector<uv_buf_t> client_bufs_;    // iovecs of the client write in flight
  std::vector<uv_buf_t> up_body_bufs_;   // iovecs of a streamed body piece in flight
  std::vector<std::array<char, 20>> resp_chunk_heads_;  // "<hex>\r\n" per re-chunked span
  std::vector<std::array<char, 20>> req_chunk_heads_;

  // The start of the request body, read before routing (StartReadingBody): decoded bytes,
  // at most client_body_buffer_size + 1. Forwarded before the rest of the stream.
  std::string body_buf_;
  bool body_buffered_ = false;  // body_buf_ belongs to this request (from the worker pool)
  bool continue_sent_ = false;  // "100 Continue" went out for this request
  std::array<char, 20> body_buf_chunk_head_{};  // "<hex>\r\n" when re-chunking body_buf_
};

}  // namespace turnpike::proxy
