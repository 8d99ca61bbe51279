#include "proxy/upstream_request.h"

#include <utility>

namespace turnpike::proxy {
namespace {

// nginx does not retry non-idempotent requests once they were sent.
bool Idempotent(base::Method m) {
  return m != base::Method::kPost && m != base::Method::kPatch && m != base::Method::kOther;
}

}  // namespace

void UpstreamRequest::Start(Worker* worker, Callbacks* callbacks, RequestContext* ctx,
                            const Upstream& upstream, const config::Timeout& timeouts,
                            upstream::NodeSetConstSharedPtr nodes, std::string_view client_host,
                            bool upgrade) {
  worker_ = worker;
  callbacks_ = callbacks;
  ctx_ = ctx;
  upstream_ = &upstream;
  timeouts_ = &timeouts;
  client_host_ = client_host;
  nodes_ = std::move(nodes);
  tried_.Clear();
  // A single node needs no key (PickerTable::PickNode bypasses the picker).
  key_hash_ = upstream.balancer == upstream::BalancerType::kChash && nodes_->nodes.size() > 1
                  ? upstream.hash_key.Hash(*ctx_, &key_scratch_)
                  : 0;
  attempts_ = 0;
  stale_retry_used_ = false;
  request_sent_ = false;
  body_streamed_ = false;
  body_inflight_ = false;
  head_parsed_ = response_started_ = client_writing_ = resp_done_ = false;
  eof_pending_ = false;
  discard_ = false;
  upgrade_ = upgrade;
  first_attempt_ms_ = uv_now(worker_->loop());
  StartAttempt();
}

// ---------------------------------------------------------------- attempts

void UpstreamRequest::StartAttempt() {
  worker_->EndAttempt(&lease_, /*final=*/false);  // the failed attempt before this one
  const uint64_t now = uv_now(worker_->loop());
  if (attempts_ > 0 && upstream_->retry_timeout > 0 &&
      now - first_attempt_ms_ > upstream_->retry_timeout * 1000) {
    callbacks_->OnRequestFailed(502);
    return;
  }
  upstream::PickRequest pick;
  pick.tried = &tried_;
  pick.hash = key_hash_;
  pick.now_ms = now;
  uint32_t i = worker_->PickNode(*upstream_, *nodes_, pick, &lease_);
  if (i == upstream::Picker::kNone) {
    callbacks_->OnRequestFailed(
        attempts_ > 0 ? attempt_status_[std::min<size_t>(attempts_, attempt_status_.size()) - 1]
                      : 502);
    return;
  }
  tried_.Add(i);
  node_index_ = i;
  // $upstream_addr, $upstream_host... of this attempt: the node's resolved address and the
  // Host the request will carry.
  const upstream::Node& node = nodes_->nodes[i];
  ctx_->facts().UpstreamAttempt(node.ip_text, node.port, UpstreamHost(node),
                                uv_now(worker_->loop()));
  if (attempts_ < attempt_status_.size()) attempt_status_[attempts_] = 0;
  ++attempts_;
  ConnectNode(/*fresh=*/false);
}

void UpstreamRequest::ConnectNode(bool fresh) {
  const upstream::Node& node = nodes_->nodes[node_index_];
  if (!fresh) up_ = worker_->TakeIdle(PoolAddr::Of(&node.addr.sa, node.addr_len));
  if (up_ != nullptr) {
    ctx_->facts().UpstreamConnected(uv_now(worker_->loop()), /*reused=*/true);
    up_->Attach(this);
    SendRequest();
    return;
  }
  up_ =
      UpstreamConnection::Connect(worker_, &node.addr.sa, node.addr_len, this, timeouts_->connect);
  if (up_ == nullptr) FailAttempt(502, /*connect_phase=*/true);
}

void UpstreamRequest::OnUpstreamConnected(int status) {
  if (status < 0) {
    FailAttempt(status == UV_ETIMEDOUT ? 504 : 502, /*connect_phase=*/true);
    return;
  }
  ctx_->facts().UpstreamConnected(uv_now(worker_->loop()), /*reused=*/false);
  SendRequest();
}

void UpstreamRequest::FailAttempt(int status, bool connect_phase) {
  ctx_->facts().UpstreamEnd(status, uv_now(worker_->loop()));
  if (attempts_ > 0 && attempts_ <= attempt_status_.size())
    attempt_status_[attempts_ - 1] = static_cast<uint16_t>(status);
  // A pooled connection the node closed in the meantime fails with EOF/RST (502) before any
  // byte of an answer, not with a timeout or a malformed answer.
  bool stale =
      up_ != nullptr && up_->reused() && !connect_phase && status == 502 && !up_->received_any();
  CloseConnection();
  body_inflight_ = false;
  if (response_started_) {  // the client already has part of a response: nothing to recover
    callbacks_->OnResponseBroken();
    return;
  }
  bool can_retry =
      !body_streamed_ && (connect_phase || !request_sent_ || Idempotent(ctx_->upstream_method()));
  if (can_retry && stale && !stale_retry_used_) {
    // Not the node's fault: retry the same node on a fresh connection, not as an attempt.
    stale_retry_used_ = true;
    request_sent_ = false;
    ConnectNode(/*fresh=*/true);
    return;
  }
  // APISIX reports a failed attempt as a timeout (504) or a TCP failure (anything else).
  ReportPassive(status == 504 ? upstream::Outcome::kTimeout : upstream::Outcome::kTcpFailure, 0);
  if (can_retry && attempts_ <= static_cast<uint32_t>(upstream_->Retries(*nodes_))) {
    StartAttempt();
    return;
  }
  callbacks_->OnRequestFailed(status);
}

void UpstreamRequest::Finish(bool reusable) {
  if (worker_ != nullptr) worker_->EndAttempt(&lease_, /*final=*/true);
  if (up_ != nullptr) {
    UpstreamConnection* up = std::exchange(up_, nullptr);
    const config::KeepalivePool& pool = upstream_->keepalive;
    reusable = reusable && !discard_ && resp_done_ && head_.keep_alive && !up->writing() &&
               !worker_->draining() && up->pending().empty() &&
               up->requests() < static_cast<uint32_t>(pool.requests);
    if (reusable) {
      up->Detach();
      if (!worker_->PutIdle(up, static_cast<size_t>(pool.size), pool.idle_timeout)) up->Close();
    } else {
      up->Close();
    }
  }
  nodes_.reset();
  attempts_ = 0;
  callbacks_ = nullptr;
}

std::string_view UpstreamRequest::UpstreamHost(const upstream::Node& node) const {
  // APISIX sets upstream_host for `node` and `rewrite` after the plugins ran
  // (set_upstream_headers), so a plugin's host survives only with `pass` (reference §3.2).
  switch (upstream_->pass_host) {
    case config::PassHost::kNode:
      return node.host_header;
    case config::PassHost::kRewrite:
      return upstream_->upstream_host;
    case config::PassHost::kPass:
      break;
  }
  std::string_view set = ctx_->upstream_host_override();
  return set.empty() ? client_host_ : set;
}

// ---------------------------------------------------------------- the request

void UpstreamRequest::SendRequest() {
  const upstream::Node& node = nodes_->nodes[node_index_];
  up_->CountRequest();
  parser_.Reset(ctx_->upstream_method() == base::Method::kHead);
  scan_pos_ = 0;
  head_parsed_ = false;
  bufs_.clear();
  int rc = callbacks_->EncodeRequest(node, UpstreamHost(node), &bufs_);
  if (rc != 0) {
    CloseConnection();
    callbacks_->OnRequestFailed(rc);
    return;
  }
  request_sent_ = true;
  body_inflight_ = bufs_.size() > 1;
  up_->ArmTimer(timeouts_->send);
  up_->StartReading();
  up_->Write(bufs_.data(), static_cast<unsigned>(bufs_.size()));  // may complete here
}

void UpstreamRequest::SendBody(std::vector<uv_buf_t>* bufs) {
  body_inflight_ = true;
  up_->ArmTimer(timeouts_->send);
  up_->Write(bufs->data(), static_cast<unsigned>(bufs->size()));  // may complete here
}

void UpstreamRequest::OnUpstreamWritten(int status) {
  body_inflight_ = false;
  if (status < 0) {
    // Answered early, the node stopped reading the body: the response still flows.
    if (head_parsed_) return;
    FailAttempt(502, /*connect_phase=*/false);
    return;
  }
  if (resp_done_) return;
  callbacks_->OnRequestWritten();
}

// ---------------------------------------------------------------- the response

void UpstreamRequest::OnUpstreamData() {
  if (client_writing_) {  // back-pressure: the client has not taken the previous piece yet
    up_->StopReading();
    return;
  }
  ProcessResponse();
}

void UpstreamRequest::ProcessResponse() {
  ResponsePiece piece;
  while (!head_parsed_) {
    std::string_view data = up_->pending();
    size_t head_len = http::FindHeadEnd(data, &scan_pos_);
    if (head_len == 0) {
      if (up_->buffer_full()) {
        FailAttempt(502, false);  // response head too large
      } else {
        up_->ArmTimer(timeouts_->read);
      }
      return;
    }
    if (!parser_.ParseHead(data.data(), head_len, &head_)) {
      FailAttempt(502, false);
      return;
    }
    int status = head_.status;
    up_->Consume(head_len);  // the head's views stay valid: the buffer does not move
    bool switched = status == 101 && upgrade_;
    if (status >= 100 && status < 200 && !switched) {  // interim response: not forwarded
      scan_pos_ = 0;
      parser_.Reset(ctx_->upstream_method() == base::Method::kHead);
      continue;
    }
    head_parsed_ = true;
    ctx_->facts().UpstreamHeader(status, uv_now(worker_->loop()));
    ReportPassive(upstream::Outcome::kSuccess, status);  // the checker sorts the status
    if (attempts_ > 0 && attempts_ <= attempt_status_.size()) {
      attempt_status_[attempts_ - 1] = static_cast<uint16_t>(status);
    }
    piece.head = &head_;
    if (switched) {  // what follows is the new protocol's, not a body
      spans_.clear();
      piece.body = &spans_;
      piece.upgrade = piece.complete = true;
      Deliver(piece);
      return;
    }
  }
  spans_.clear();
  piece.body = &spans_;
  std::string_view data = up_->pending();
  if (parser_.message_complete()) {
    piece.complete = true;  // no body, or it ended with the bytes already parsed
  } else if (!data.empty()) {
    http::BodyChunk r = parser_.FeedBody(data.data(), data.size(), &spans_);
    if (r.error) {
      FailAttempt(502, false);  // a broken body after the head went out closes the client
      return;
    }
    up_->Consume(r.consumed);
    piece.complete = r.complete;
  }
  if (piece.head == nullptr && spans_.empty() && !piece.complete) {
    up_->ArmTimer(timeouts_->read);  // only framing bytes so far
    return;
  }
  Deliver(piece);
}

void UpstreamRequest::Deliver(ResponsePiece& piece) {
  if (piece.head != nullptr) response_started_ = true;
  if (piece.complete) resp_done_ = true;
  // Reading from the node goes on until more data arrives during the client write (then
  // OnUpstreamData stops it): small responses cost no epoll_ctl calls.
  client_writing_ = true;
  if (up_ != nullptr) {
    up_->set_pinned(true);
    up_->StopTimer();
  }
  if (callbacks_->OnResponse(piece)) return;  // the exchange may be gone: touch nothing
  // Nothing to write (a body filter keeps the bytes for later).
  client_writing_ = false;
  if (up_ != nullptr) up_->set_pinned(false);
  if (resp_done_) {
    OnResponseDone();
  } else {
    up_->ArmTimer(timeouts_->read);
  }
}

void UpstreamRequest::OnClientWritten() {
  client_writing_ = false;
  if (up_ != nullptr) up_->set_pinned(false);
  if (eof_pending_) {
    eof_pending_ = false;
    OnUpstreamEof(UV_EOF);
    return;
  }
  if (!resp_done_) {
    if (up_ == nullptr) {
      callbacks_->OnResponseBroken();
      return;
    }
    up_->StartReading();
    up_->ArmTimer(timeouts_->read);
    if (!up_->pending().empty()) ProcessResponse();
    return;
  }
  OnResponseDone();
}

UpstreamConnection* UpstreamRequest::TakeConnection(bool* read_ended) {
  *read_ended = std::exchange(eof_pending_, false);
  client_writing_ = false;
  UpstreamConnection* up = std::exchange(up_, nullptr);
  if (up != nullptr) up->set_pinned(false);
  return up;
}

void UpstreamRequest::OnResponseDone() {
  ctx_->facts().UpstreamEnd(0, uv_now(worker_->loop()));
  callbacks_->OnResponseComplete();
}

void UpstreamRequest::OnUpstreamEof(int /*status*/) {
  if (client_writing_) {  // finish the write in flight first
    eof_pending_ = true;
    return;
  }
  if (!head_parsed_) {
    FailAttempt(502, /*connect_phase=*/false);
    return;
  }
  if (!parser_.FinishAtEof()) {
    callbacks_->OnResponseBroken();  // truncated: the client sees the connection end
    return;
  }
  // The body was delimited by the close.
  CloseConnection();
  spans_.clear();
  ResponsePiece piece;
  piece.body = &spans_;
  piece.complete = true;
  Deliver(piece);
}

void UpstreamRequest::OnUpstreamTimeout() {
  if (up_ == nullptr) return;
  if (!up_->connected()) {
    FailAttempt(504, /*connect_phase=*/true);
  } else if (!head_parsed_) {
    FailAttempt(504, /*connect_phase=*/false);
  } else {
    callbacks_->OnResponseBroken();  // stalled in the middle of a response
  }
}

}  // namespace turnpike::proxy
