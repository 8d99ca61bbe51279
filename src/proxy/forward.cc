// The upstream half of ClientConnection: picking a node, connecting or reusing a pooled
// connection, streaming the request up and the response down, retries and upstream errors.

#include <charconv>
#include <cstring>

#include "base/strings.h"
#include "proxy/client_connection.h"
#include "proxy/upstream_connection.h"

namespace turnpike::proxy {
namespace {

constexpr std::string_view kCrlf = "\r\n";
constexpr std::string_view kLastChunk = "0\r\n\r\n";

void AppendHeader(std::string* out, std::string_view name, std::string_view value) {
  out->append(name);
  out->append(": ");
  out->append(value);
  out->append(kCrlf);
}

uv_buf_t Buf(std::string_view s) { return uv_buf_init(const_cast<char*>(s.data()), s.size()); }

// nginx does not retry non-idempotent requests once they were sent.
bool Idempotent(base::Method m) {
  return m != base::Method::kPost && m != base::Method::kPatch && m != base::Method::kOther;
}

// Appends `spans` to `bufs`, framed as chunks when `chunked`; `heads` stores chunk sizes.
void AppendSpans(const std::vector<std::string_view>& spans, bool chunked,
                 std::vector<std::array<char, 20>>* heads, std::vector<uv_buf_t>* bufs) {
  if (chunked && heads->size() < spans.size()) heads->resize(spans.size());
  for (size_t i = 0; i < spans.size(); ++i) {
    if (spans[i].empty()) continue;
    if (chunked) {
      auto& h = (*heads)[i];
      auto [p, ec] = std::to_chars(h.data(), h.data() + 16, spans[i].size(), 16);
      *p++ = '\r';
      *p++ = '\n';
      bufs->push_back(uv_buf_init(h.data(), static_cast<unsigned>(p - h.data())));
    }
    bufs->push_back(Buf(spans[i]));
    if (chunked) bufs->push_back(Buf(kCrlf));
  }
}

}  // namespace

// ---------------------------------------------------------------- attempts

void ClientConnection::StartAttempt() {
  if (attempts_ > 0 && upstream_->retry_timeout > 0 &&
      uv_now(worker_->loop()) - first_attempt_ms_ > upstream_->retry_timeout * 1000) {
    ReplyLocal(502, "");
    return;
  }
  uint32_t i = worker_->PickNode(*upstream_, tried_);
  if (i == upstream::RoundRobinPicker::kNone) {
    ReplyLocal(attempts_ > 0 ? attempt_status_[std::min<size_t>(attempts_, 8) - 1] : 502, "");
    return;
  }
  tried_.Add(i);
  node_index_ = i;
  ReportAttempt(upstream_->nodes->nodes[i]);
  if (attempts_ < attempt_status_.size()) attempt_status_[attempts_] = 0;
  ++attempts_;
  ConnectNode(/*fresh=*/false);
}

void ClientConnection::ConnectNode(bool fresh) {
  const upstream::Node& node = upstream_->nodes->nodes[node_index_];
  PoolKey key;
  std::memcpy(&key.addr, &node.addr, node.addr_len);
  key.len = node.addr_len;
  if (!fresh) up_ = worker_->TakeIdle(key);
  if (up_ != nullptr) {
    ctx_.facts().UpstreamConnected(uv_now(worker_->loop()), /*reused=*/true);
    up_->Attach(this);
    SendRequestHead();
    return;
  }
  const config::Timeout& t = timeouts();
  up_ = UpstreamConnection::Connect(worker_, key, this, t.connect);
  if (up_ == nullptr) FailAttempt(502, /*connect_phase=*/true);
}

void ClientConnection::OnUpstreamConnected(int status) {
  if (status < 0) {
    FailAttempt(status == UV_ETIMEDOUT ? 504 : 502, /*connect_phase=*/true);
    return;
  }
  ctx_.facts().UpstreamConnected(uv_now(worker_->loop()), /*reused=*/false);
  SendRequestHead();
}

void ClientConnection::FailAttempt(int status, bool connect_phase) {
  ctx_.facts().UpstreamEnd(status, uv_now(worker_->loop()));
  if (attempts_ > 0 && attempts_ <= attempt_status_.size()) attempt_status_[attempts_ - 1] = status;
  // A pooled connection the node closed in the meantime fails with EOF/RST (502) before any
  // byte of an answer, not with a timeout or a malformed answer.
  bool stale = up_ != nullptr && up_->reused() && !connect_phase && status == 502 &&
               !up_->received_any();
  if (up_ != nullptr) {
    up_->Close();  // cancels its write: our buffer is free again
    up_ = nullptr;
  }
  body_inflight_ = false;
  if (resp_head_sent_) {  // the client already has part of a response: nothing to recover
    Close();
    return;
  }
  bool can_retry = !body_fed_ && (connect_phase || !request_sent_ || Idempotent(req_.method));
  if (can_retry && stale && !stale_retry_used_) {
    // A pooled connection the node had already closed: not the node's fault, so retry the
    // same node on a fresh connection without counting an attempt.
    stale_retry_used_ = true;
    request_sent_ = false;
    ConnectNode(/*fresh=*/true);
    return;
  }
  if (can_retry && attempts_ <= static_cast<uint32_t>(upstream_->retries)) {
    StartAttempt();
    return;
  }
  ReplyLocal(status, "");
}

void ClientConnection::ReleaseUpstream(bool reusable) {
  if (up_ == nullptr) return;
  UpstreamConnection* up = up_;
  up_ = nullptr;
  const config::KeepalivePool& pool = upstream_->keepalive;
  if (reusable && up->pending().empty() && up->requests() < static_cast<uint32_t>(pool.requests)) {
    up->Detach();
    if (worker_->PutIdle(up, static_cast<size_t>(pool.size), pool.idle_timeout)) return;
  }
  up->Close();
}

// $upstream_addr, $upstream_host... of the attempt on `node` (the node's resolved address,
// the Host header EncodeRequestHead will send).
void ClientConnection::ReportAttempt(const upstream::Node& node) {
  std::string_view host;
  switch (upstream_->pass_host) {
    case config::PassHost::kPass: host = req_.host.empty() ? host_ : req_.host; break;
    case config::PassHost::kNode: host = node.host_header; break;
    case config::PassHost::kRewrite: host = upstream_->upstream_host; break;
  }
  ctx_.facts().UpstreamAttempt(node.ip_text, node.port, host, uv_now(worker_->loop()));
}

// ---------------------------------------------------------------- request upstream

void ClientConnection::EncodeRequestHead(std::string* out, const upstream::Node& node) {
  out->clear();
  out->append(req_.method_name);
  out->push_back(' ');
  if (!req_.target.empty() && req_.target[0] == '/') {
    out->append(req_.target);
  } else {  // absolute-form or '*': send origin-form
    out->append(req_.path);
    if (!req_.query.empty()) {
      out->push_back('?');
      out->append(req_.query);
    }
  }
  out->append(" HTTP/1.1\r\nHost: ");
  switch (upstream_->pass_host) {
    case config::PassHost::kPass: out->append(req_.host.empty() ? host_ : req_.host); break;
    case config::PassHost::kNode: out->append(node.host_header); break;
    case config::PassHost::kRewrite: out->append(upstream_->upstream_host); break;
  }
  out->append(kCrlf);
  std::string_view xff_first;
  bool xff_many = false;
  const HeaderEdits& edits = ctx_.request_edits();
  bool edited = phases_ran_ && !edits.empty();
  // apisix.trusted_addresses: a trusted peer's X-Forwarded-Proto/Host/Port are kept; when the
  // list is set, an untrusted peer's X-Forwarded-For is dropped.
  const AddressRules& rules = snapshot_->addresses;
  bool trusted = peer_trusted_;
  std::string_view fwd_proto, fwd_host, fwd_port;
  for (const http::Header& h : req_.headers) {
    std::string_view n = h.name;
    if (http::IsHopByHop(n) ||
        http::IsListedIn(n, req_.connection_tokens, req_.connection_token_count)) {
      continue;
    }
    if (edited && edits.Touches(n)) continue;  // a plugin set or removed it
    switch (n.size()) {
      case 4:
        if (base::EqualsIgnoreCase(n, "host")) continue;
        break;
      case 6:
        if (base::EqualsIgnoreCase(n, "expect")) continue;
        break;
      case 9:
        if (base::EqualsIgnoreCase(n, "x-real-ip") || base::EqualsIgnoreCase(n, "forwarded")) continue;
        break;
      case 14:
        if (base::EqualsIgnoreCase(n, "content-length")) continue;
        break;
      case 15:
        if (base::EqualsIgnoreCase(n, "x-forwarded-for")) {
          if (rules.has_trusted && !trusted) continue;
          if (xff_first.empty()) {
            xff_first = h.value;
          } else {
            xff_many = true;
          }
          continue;
        }
        break;
      case 16:
        if (base::EqualsIgnoreCase(n, "x-forwarded-host")) {
          if (trusted) fwd_host = h.value;
          continue;
        }
        if (base::EqualsIgnoreCase(n, "x-forwarded-port")) {
          if (trusted) fwd_port = h.value;
          continue;
        }
        break;
      case 17:
        if (base::EqualsIgnoreCase(n, "x-forwarded-proto")) {
          if (trusted) fwd_proto = h.value;
          continue;
        }
        break;
      default:
        break;
    }
    AppendHeader(out, n, h.value);
  }
  AppendHeader(out, "X-Real-IP", remote_addr_);
  out->append("X-Forwarded-For: ");
  if (xff_many) {
    for (const http::Header& h : req_.headers) {
      if (base::EqualsIgnoreCase(h.name, "x-forwarded-for")) {
        out->append(h.value);
        out->append(", ");
      }
    }
  } else if (!xff_first.empty()) {
    out->append(xff_first);
    out->append(", ");
  }
  out->append(remote_addr_);
  out->append(kCrlf);
  AppendHeader(out, "X-Forwarded-Proto", fwd_proto.empty() ? "http" : fwd_proto);
  AppendHeader(out, "X-Forwarded-Host",
               !fwd_host.empty() ? fwd_host : (req_.host.empty() ? host_ : req_.host));
  out->append("X-Forwarded-Port: ");
  std::string_view host = req_.host;
  size_t colon = host.rfind(':');
  if (!fwd_port.empty()) {
    out->append(fwd_port);
  } else if (colon != std::string_view::npos &&
             host.find(']', colon) == std::string_view::npos && colon + 1 < host.size()) {
    out->append(host.substr(colon + 1));
  } else {
    base::AppendDecimal(out, local_port_);
  }
  out->append(kCrlf);
  if (edited) {
    edits.ForEachSet([&](std::string_view name, std::string_view value) {
      AppendHeader(out, name, value);
    });
  }
  if (req_.framing == http::Framing::kContentLength) {
    out->append("Content-Length: ");
    base::AppendDecimal(out, req_.content_length);
    out->append(kCrlf);
  } else if (req_.framing == http::Framing::kChunked) {
    out->append("Transfer-Encoding: chunked\r\n");
  }
  out->append(kCrlf);
}

void ClientConnection::SendRequestHead() {
  const upstream::Node& node = upstream_->nodes->nodes[node_index_];
  EncodeRequestHead(&up_->request_head(), node);
  up_->CountRequest();
  up_->parser().Reset(req_.method == base::Method::kHead);
  *up_->scan_pos() = 0;
  resp_head_parsed_ = false;
  up_bufs_.clear();
  up_bufs_.push_back(Buf(up_->request_head()));
  AppendBufferedBody();
  int rc = AppendRequestBody();
  if (rc != 0) {
    up_->Close();
    up_ = nullptr;
    keep_alive_ = false;
    ReplyLocal(rc, "");
    return;
  }
  request_sent_ = true;
  body_inflight_ = up_bufs_.size() > 1;
  const config::Timeout& t = timeouts();
  up_->ArmTimer(t.send);
  up_->StartReading();
  up_->Write(up_bufs_.data(), static_cast<unsigned>(up_bufs_.size()));  // may complete here
}

// The body read before routing goes first, framed as the request's own; it stays in
// body_buf_, so every attempt sends it again.
void ClientConnection::AppendBufferedBody() {
  if (!body_buffered_) return;
  bool chunked = req_.framing == http::Framing::kChunked;
  if (!body_buf_.empty()) {
    if (chunked) {
      char* h = body_buf_chunk_head_.data();
      auto [p, ec] = std::to_chars(h, h + 16, body_buf_.size(), 16);
      *p++ = '\r';
      *p++ = '\n';
      up_bufs_.push_back(uv_buf_init(h, static_cast<unsigned>(p - h)));
    }
    up_bufs_.push_back(Buf(body_buf_));
    if (chunked) up_bufs_.push_back(Buf(kCrlf));
  }
  // Complete already: AppendRequestBody adds nothing, so the last chunk is ours to send.
  if (chunked && req_body_done_) up_bufs_.push_back(Buf(kLastChunk));
}

int ClientConnection::AppendRequestBody() {
  if (req_body_done_) return 0;
  spans_.clear();
  http::BodyChunk r = parser_.FeedBody(buf_ + begin_, end_ - begin_, &spans_);
  if (r.error) return 400;
  begin_ += r.consumed;
  for (std::string_view s : spans_) body_bytes_ += s.size();
  if (!spans_.empty()) body_fed_ = true;
  uint64_t max_body = worker_->gateway().client_max_body_size;
  if (max_body != 0 && body_bytes_ > max_body) return 413;
  bool chunked = req_.framing == http::Framing::kChunked;
  AppendSpans(spans_, chunked, &req_chunk_heads_, &up_bufs_);
  if (r.complete) {
    req_body_done_ = true;
    if (chunked) up_bufs_.push_back(Buf(kLastChunk));
  }
  return 0;
}

void ClientConnection::ForwardRequestBody() {
  if (req_body_done_ || up_ == nullptr || !up_->connected() || up_->writing() || resp_done_) {
    StopReading();  // keep it buffered (pipelined request, or waiting for the upstream)
    return;
  }
  up_bufs_.clear();
  int rc = AppendRequestBody();
  if (rc != 0) {
    if (resp_head_sent_) {
      Close();
    } else {
      up_->Close();
      up_ = nullptr;
      keep_alive_ = false;
      ReplyLocal(rc, "");
    }
    return;
  }
  if (up_bufs_.empty()) return;  // only framing bytes so far: read on
  StopReading();  // back-pressure: no more body until the node took this piece
  body_inflight_ = true;
  timer_.Disarm();
  const config::Timeout& t = timeouts();
  up_->ArmTimer(t.send);
  up_->Write(up_bufs_.data(), static_cast<unsigned>(up_bufs_.size()));  // may complete here
}

void ClientConnection::OnUpstreamWritten(int status) {
  body_inflight_ = false;
  if (status < 0) {
    if (resp_head_parsed_) {
      // The node answered early and stopped reading our body; the response still flows.
      return;
    }
    FailAttempt(502, /*connect_phase=*/false);
    return;
  }
  if (resp_done_) return;
  const config::Timeout& t = timeouts();
  if (!req_body_done_) {
    // More body to come from the client: the client's pace now, not the node's.
    up_->StopTimer();
    StartReading();
    ArmTimer(worker_->gateway().client_body_timeout);
    if (begin_ < end_) ForwardRequestBody();
    return;
  }
  if (!resp_head_sent_ || !writing_) up_->ArmTimer(t.read);
}

// ---------------------------------------------------------------- response downstream

void ClientConnection::OnUpstreamData() {
  if (writing_) {  // back-pressure: the client has not taken the previous piece yet
    up_->StopReading();
    return;
  }
  ProcessResponse();
}

void ClientConnection::ProcessResponse() {
  const config::Timeout& t = timeouts();
  client_bufs_.clear();
  while (!resp_head_parsed_) {
    std::string_view data = up_->pending();
    size_t head_len = http::FindHeadEnd(data, up_->scan_pos());
    if (head_len == 0) {
      if (up_->buffer_full()) FailAttempt(502, false);  // response head too large
      else up_->ArmTimer(t.read);
      return;
    }
    if (!up_->parser().ParseHead(data.data(), head_len, &up_->head())) {
      FailAttempt(502, false);
      return;
    }
    int status = up_->head().status;
    if (status >= 100 && status < 200) {  // interim response: not forwarded
      up_->Consume(head_len);
      *up_->scan_pos() = 0;
      up_->parser().Reset(req_.method == base::Method::kHead);
      continue;
    }
    resp_head_parsed_ = true;
    ctx_.facts().UpstreamHeader(status, uv_now(worker_->loop()));
    if (attempts_ > 0 && attempts_ <= attempt_status_.size()) {
      attempt_status_[attempts_ - 1] = static_cast<uint16_t>(status);
    }
    EncodeResponseHead();
    up_->Consume(head_len);
    client_bufs_.push_back(Buf(out_));
  }
  if (!AppendResponseBody()) return;
  if (!client_bufs_.empty()) {
    resp_head_sent_ = true;
    // Reading from the node goes on until more data arrives during this write (then
    // OnUpstreamData stops it): small responses cost no epoll_ctl calls.
    up_->set_pinned(true);
    up_->StopTimer();
    WriteClient();
    return;
  }
  if (resp_done_) {
    OnResponseWritten();
  } else {
    up_->ArmTimer(t.read);
  }
}

void ClientConnection::EncodeResponseHead() {
  const http::ResponseHead& r = up_->head();
  resp_status_ = r.status;
  bool no_body = http::ResponseHasNoBody(r.status, req_.method == base::Method::kHead);
  if (phases_ran_) {
    ctx_.SetUpstreamResponseHeaders(&r.headers);
    RunHeaderFilters(r.status);  // may replace resp_status_
  }
  bool body_modified = phases_ran_ && ctx_.body_modified() && !no_body;
  const HeaderEdits& edits = ctx_.response_edits();
  bool edited = phases_ran_ && !edits.empty();
  out_.clear();
  out_.append("HTTP/1.1 ");
  base::AppendDecimal(&out_, static_cast<uint64_t>(resp_status_));
  out_.push_back(' ');
  out_.append(r.reason.empty() || resp_status_ != r.status ? http::ReasonPhrase(resp_status_)
                                                           : r.reason);
  out_.append(kCrlf);
  out_.append(worker_->server_header());
  for (const http::Header& h : r.headers) {
    std::string_view n = h.name;
    if (http::IsHopByHop(n) || http::IsListedIn(n, r.connection_tokens, r.connection_token_count)) {
      continue;
    }
    if (base::EqualsIgnoreCase(n, "server")) continue;
    if (!no_body && base::EqualsIgnoreCase(n, "content-length")) continue;  // re-stated below
    if (edited && edits.Touches(n)) continue;               // a plugin set or removed it
    AppendHeader(&out_, n, h.value);
  }
  AppendResponseEdits(&out_);
  if (r.status >= 500 || worker_->gateway().show_upstream_status_in_response_header) {
    out_.append("X-APISIX-Upstream-Status: ");
    for (uint32_t i = 0; i < attempts_ && i < attempt_status_.size(); ++i) {
      if (i > 0) out_.append(", ");
      base::AppendDecimal(&out_, attempt_status_[i]);
    }
    out_.append(kCrlf);
  }
  resp_chunked_ = resp_close_delimited_ = false;
  if (!no_body) {
    if (r.framing == http::Framing::kContentLength && !body_modified) {
      out_.append("Content-Length: ");
      base::AppendDecimal(&out_, r.content_length);
      out_.append(kCrlf);
    } else if (r.framing == http::Framing::kNone && !body_modified) {
      out_.append("Content-Length: 0\r\n");
    } else if (req_.version_minor >= 1) {
      out_.append("Transfer-Encoding: chunked\r\n");
      resp_chunked_ = true;
    } else {
      resp_close_delimited_ = true;
      keep_alive_ = false;
    }
  }
  if (!req_body_done_) keep_alive_ = false;  // the rest of the request body is not read
  if (worker_->draining()) keep_alive_ = false;
  if (!keep_alive_) {
    out_.append("Connection: close\r\n");
  } else if (req_.version_minor == 0) {
    out_.append("Connection: keep-alive\r\n");
  }
  out_.append(kCrlf);
}

// Returns false when the exchange was ended here (error handled).
bool ClientConnection::AppendResponseBody() {
  std::string_view data = up_->pending();
  if (resp_done_ || (data.empty() && !up_->parser().message_complete())) {
    if (up_->parser().message_complete()) resp_done_ = true;
    return true;
  }
  spans_.clear();
  http::BodyChunk r = up_->parser().FeedBody(data.data(), data.size(), &spans_);
  if (r.error) {
    if (resp_head_sent_ || !client_bufs_.empty()) {
      // The head is out (or about to be): a broken body can only end the connection.
      if (!resp_head_sent_) {
        client_bufs_.clear();
        FailAttempt(502, false);
      } else {
        Close();
      }
    } else {
      FailAttempt(502, false);
    }
    return false;
  }
  up_->Consume(r.consumed);
  if (body_filters_active()) {
    // Filters may change the bytes: run every piece through them into one buffer.
    filtered_.clear();
    bool ended = false;
    if (spans_.empty() && r.complete) {
      ended = FilterBody({}, !body_started_, true, &filtered_);
    }
    for (size_t i = 0; i < spans_.size() && !ended; ++i) {
      bool last = r.complete && i + 1 == spans_.size();
      ended = FilterBody(spans_[i], !body_started_, last, &filtered_);
    }
    spans_.clear();
    if (!filtered_.empty()) spans_.push_back(filtered_);
    if (ended) {
      // A filter ended the body: the rest from the node is not wanted, so the connection
      // cannot be reused.
      r.complete = true;
      up_discard_ = true;
    }
  }
  AppendSpans(spans_, resp_chunked_, &resp_chunk_heads_, &client_bufs_);
  if (r.complete) {
    resp_done_ = true;
    if (resp_chunked_) client_bufs_.push_back(Buf(kLastChunk));
  }
  return true;
}

void ClientConnection::OnResponseWritten() {
  if (up_ != nullptr) up_->set_pinned(false);
  if (up_eof_pending_) {
    up_eof_pending_ = false;
    OnUpstreamEof(UV_EOF);
    return;
  }
  if (!resp_done_) {
    if (up_ == nullptr) {
      Close();
      return;
    }
    up_->StartReading();
    const config::Timeout& t = timeouts();
    up_->ArmTimer(t.read);
    if (!up_->pending().empty()) ProcessResponse();
    return;
  }
  ctx_.facts().UpstreamEnd(0, uv_now(worker_->loop()));
  bool reusable = up_ != nullptr && !up_discard_ && up_->head().keep_alive && req_body_done_ &&
                  !resp_close_delimited_ && !up_->writing() && !worker_->draining();
  ReleaseUpstream(reusable);
  if (!req_body_done_) keep_alive_ = false;
  FinishExchange();
}

void ClientConnection::OnUpstreamEof(int /*status*/) {
  if (writing_) {  // finish the write in flight first
    up_eof_pending_ = true;
    return;
  }
  if (!resp_head_parsed_) {
    FailAttempt(502, /*connect_phase=*/false);
    return;
  }
  if (up_->parser().FinishAtEof()) {  // body delimited by close
    resp_done_ = true;
    up_->StopReading();
    client_bufs_.clear();
    if (resp_chunked_) client_bufs_.push_back(Buf(kLastChunk));
    up_->Close();
    up_ = nullptr;
    if (!client_bufs_.empty()) {
      WriteClient();
    } else {
      OnResponseWritten();
    }
    return;
  }
  Close();  // truncated response: the client sees the connection end
}

void ClientConnection::OnUpstreamTimeout() {
  if (up_ == nullptr) return;
  if (!up_->connected()) {
    FailAttempt(504, /*connect_phase=*/true);
  } else if (!resp_head_parsed_) {
    FailAttempt(504, /*connect_phase=*/false);
  } else {
    Close();  // stalled in the middle of a response
  }
}

}  // namespace turnpike::proxy
