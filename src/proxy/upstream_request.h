// UpstreamRequest: the upstream half of one request — picking a node, a pooled or new
// connection to it, sending the request, parsing the response, retries — reporting to the
// exchange through UpstreamRequest::Callbacks (Envoy's router UpstreamRequest).
//
// It knows nodes, attempts and the upstream connection; it does not know the client. What
// goes up (the head and body bytes for a node) the callbacks encode; what comes back (the
// response head, body pieces, the end) it hands to them. Back-pressure runs through it: while
// the client has not taken a response piece (OnResponse returned true and OnClientWritten has
// not come yet) it reads no more from the node, and the piece's bytes stay in the upstream
// connection's buffer (pinned, no copies).
//
// Retries follow nginx's proxy_next_upstream: a failed connect, or a failure before any byte
// of an answer, tries the next untried node while `retries` and `retry_timeout` allow, unless
// a non-idempotent request was sent already or streamed body bytes went up (those cannot be
// replayed; a body read before routing can). A pooled connection the node had closed in the
// meantime is retried once on a fresh connection to the same node without counting an attempt.
//
// A member of the exchange (its scratch keeps its capacity between requests: no allocation
// once warm). Worker thread only.
#pragma once

#include <uv.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/specs.h"
#include "http/message.h"
#include "http/parser.h"
#include "proxy/request_context.h"
#include "proxy/snapshot.h"
#include "proxy/upstream_connection.h"
#include "proxy/worker.h"
#include "upstream/balancer.h"

namespace turnpike::proxy {

class UpstreamRequest final : UpstreamConnection::Owner {
 public:
  // A piece of the response, handed to Callbacks::OnResponse.
  struct ResponsePiece {
    const http::ResponseHead* head = nullptr;  // the head, in the first piece only
    // Body bytes (views into the upstream connection's buffer), de-framed; the callee may
    // replace them (its body filters).
    std::vector<std::string_view>* body = nullptr;
    bool complete = false;  // the body ends with this piece (the callee may end it: Cut)
    // The head is a 101 to the upgrade the request asked for (Start's `upgrade`): no body
    // follows; once the client has the head, the callee takes the connection over
    // (TakeConnection) and what follows is the new protocol's.
    bool upgrade = false;
  };

  // What the request reports to its exchange. Every callback may end the exchange (write to
  // the client, reply, close), so the request does nothing after a callback that may have.
  class Callbacks {
   public:
    // Encodes the request for `node` (the head, with `host` as its Host; the body bytes at
    // hand) into `bufs`, which must stay valid until the write completes. Returns 0, or the
    // status to answer instead (a malformed or oversized body): the attempt then ends and
    // OnRequestFailed(status) follows.
    virtual int EncodeRequest(const upstream::Node& node, std::string_view host,
                              std::vector<uv_buf_t>* bufs) = 0;
    // A write of the request went out (the head, or a body piece of SendBody) and no answer
    // is complete yet. The callee calls AwaitResponse() when the whole body is out, or feeds
    // more body (SendBody) as the client sends it.
    virtual void OnRequestWritten() = 0;
    // A piece of the response. Returns true when it started writing to the client: then
    // OnClientWritten() comes when the client took it (perhaps inside this call), else the
    // request reads on.
    virtual bool OnResponse(ResponsePiece& piece) = 0;
    // The whole response went to the client: the exchange ends (log phase, then Finish()).
    virtual void OnResponseComplete() = 0;
    // No answer: every attempt failed (the status of the last one: 502, 504, ...), none was
    // allowed, or EncodeRequest refused. The exchange answers `status` itself.
    virtual void OnRequestFailed(int status) = 0;
    // The response broke after its head went to the client (the node closed, stalled or sent
    // a malformed body): nothing can be recovered; the client connection must close.
    virtual void OnResponseBroken() = 0;

   protected:
    ~Callbacks() = default;
  };

  // Begins the first attempt. `nodes` is the upstream's node set, pinned by the request
  // (not empty); `client_host` the Host the client sent (pass_host: pass). `upgrade`: the
  // request asks the node to switch protocols, so a 101 is its answer (ResponsePiece::upgrade)
  // rather than an interim one. Everything passed must outlive the request.
  void Start(Worker* worker, Callbacks* callbacks, RequestContext* ctx, const Upstream& upstream,
             const config::Timeout& timeouts, upstream::NodeSetConstSharedPtr nodes,
             std::string_view client_host, bool upgrade = false);

  // A body piece for the node (the callee's `bufs`, valid until OnRequestWritten). Only when
  // ready_for_body().
  void SendBody(std::vector<uv_buf_t>* bufs);
  // The node can take a body piece now: connected, no write in flight, no answer complete.
  bool ready_for_body() const {
    return up_ != nullptr && up_->connected() && !up_->writing() && !resp_done_;
  }
  // The whole request went up: wait for the answer (the read timeout runs, unless the
  // client is still taking a response piece).
  void AwaitResponse() {
    if (!response_started_ || !client_writing_) up_->ArmTimer(timeouts_->read);
  }
  // The client will send more body: the node is not waited on meanwhile.
  void AwaitClientBody() { up_->StopTimer(); }
  // During OnResponse: the exchange wants no more of the body (a body filter ended it). The
  // response counts as complete; the connection is not reused (the rest was not read).
  void Cut() { resp_done_ = discard_ = true; }
  // Streamed (not replayable) body bytes went up with this attempt: no retry after a failure.
  void set_body_streamed() { body_streamed_ = true; }
  // A write to the node refers to bytes the exchange owns (the client's read buffer).
  bool body_inflight() const { return body_inflight_; }

  // The client took the last response piece (after OnResponse returned true).
  void OnClientWritten();

  // After an `upgrade` piece went to the client (OnClientWritten does not follow then): the
  // node's connection, for its new owner, which closes it in the end (it never goes back to
  // the pool); null when it is gone. `read_ended`: the node closed its side meanwhile. Bytes
  // behind the 101 stay in its pending(). Finish() still follows.
  UpstreamConnection* TakeConnection(bool* read_ended);

  // Ends the request: the connection back to the keep-alive pool when the response allowed
  // it and `reusable` (the exchange's view: the client's request was fully read), else
  // closed; the node set is released. Idempotent; also for a request that never started.
  void Finish(bool reusable);
  // Stops the attempt in progress (the exchange answers itself): closes the connection, no
  // callback follows; statuses() stay for the answer. Finish() still follows.
  void Cancel() { CloseConnection(); }

  // Some of the response went to the client (its head at least).
  bool response_started() const { return response_started_; }
  // The upstream status of every attempt so far (X-APISIX-Upstream-Status); 0 for an attempt
  // still running.
  std::span<const uint16_t> statuses() const {
    return {attempt_status_.data(), std::min<size_t>(attempts_, attempt_status_.size())};
  }

 private:
  // UpstreamConnection::Owner
  void OnUpstreamConnected(int status) override;
  void OnUpstreamData() override;
  void OnUpstreamEof(int status) override;
  void OnUpstreamWritten(int status) override;
  void OnUpstreamTimeout() override;

  void StartAttempt();
  void ConnectNode(bool fresh);
  void SendRequest();
  void ProcessResponse();
  // Hands `piece` to the exchange; what follows when it wrote nothing.
  void Deliver(ResponsePiece& piece);
  void OnResponseDone();
  void FailAttempt(int status, bool connect_phase);
  // Passive health checks (checks.passive): how the attempt at node_index_ ended, for the
  // upstream's checker: its HTTP status, or (status 0) a connect failure or timeout. A few
  // stores into this worker's ring; nothing without passive checks.
  void ReportPassive(upstream::Outcome outcome, int status) {
    if (upstream_->health != nullptr && upstream_->health->passive()) {
      upstream_->health->Report(worker_->index(), nodes_->nodes[node_index_], outcome, status);
    }
  }
  // The Host sent to `node`: what pass_host says; with `pass`, a plugin's SetUpstreamHost
  // replaces the client's.
  std::string_view UpstreamHost(const upstream::Node& node) const;
  void CloseConnection() {
    if (up_ != nullptr) {
      up_->Close();  // cancels its write: the callee's buffers are free again
      up_ = nullptr;
    }
  }

  Worker* worker_ = nullptr;
  Callbacks* callbacks_ = nullptr;
  RequestContext* ctx_ = nullptr;
  const Upstream* upstream_ = nullptr;
  const config::Timeout* timeouts_ = nullptr;
  std::string_view client_host_;
  upstream::NodeSetConstSharedPtr nodes_;  // pinned at Start (node_index_ indexes it)
  uint32_t node_index_ = 0;
  upstream::TriedSet tried_;
  // chash: the hash of the request's key, computed once (at Start) for all its attempts.
  uint32_t key_hash_ = 0;
  std::string key_scratch_;  // a rendered vars_combinations key (capacity kept)
  // The attempt in flight, for pickers that count attempts (least_conn, ewma): ended before
  // the next pick and at Finish().
  upstream::PickLease lease_;
  uint32_t attempts_ = 0;
  std::array<uint16_t, 8> attempt_status_{};  // upstream status per attempt (502/504/...)
  uint64_t first_attempt_ms_ = 0;
  UpstreamConnection* up_ = nullptr;

  http::ResponseParser parser_;
  http::ResponseHead head_;              // views into up_'s read buffer
  size_t scan_pos_ = 0;                  // FindHeadEnd's resume point in the response head
  std::vector<uv_buf_t> bufs_;           // the request write in flight (head and body)
  std::vector<std::string_view> spans_;  // body spans from the parser

  bool stale_retry_used_ = false;
  bool request_sent_ = false;   // some of the request was written to a node
  bool body_streamed_ = false;  // see set_body_streamed
  bool body_inflight_ = false;  // see body_inflight
  bool head_parsed_ = false;
  bool response_started_ = false;  // see response_started
  bool client_writing_ = false;    // a response piece is being written to the client
  bool resp_done_ = false;
  bool eof_pending_ = false;  // the node closed while a client write was in flight
  bool discard_ = false;      // the response was cut short: do not pool the connection
  bool upgrade_ = false;      // see Start
};

}  // namespace turnpike::proxy
