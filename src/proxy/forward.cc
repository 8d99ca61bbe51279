// The upstream half of ClientConnection: picking a node, connecting or reusing a pooled
// connection, streaming the request up and the response down, retries and upstream errors.

#include <charconv>
#include <cstring>

#include "base/strings.h"
#include "http/request_encoder.h"
#include "http/response_encoder.h"
#include "proxy/client_connection.h"
#include "proxy/upstream_connection.h"

namespace turnpike::proxy {
namespace {

constexpr std::string_view kCrlf = "\r\n";
constexpr std::string_view kLastChunk = "0\r\n\r\n";

uv_buf_t Buf(std::string_view s) { return core::IoBuf(s); }

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
      bufs->push_back(core::IoBuf(h.data(), static_cast<size_t>(p - h.data())));
    }
    bufs->push_back(Buf(spans[i]));
    if (chunked) bufs->push_back(Buf(kCrlf));
  }
}

}  // namespace

// ---------------------------------------------------------------- attempts

void ClientConnection::StartAttempt() {
  if (x_->attempts > 0 && x_->upstream->retry_timeout > 0 &&
      uv_now(worker_->loop()) - x_->first_attempt_ms > x_->upstream->retry_timeout * 1000) {
    ReplyLocal(502, "");
    return;
  }
  uint32_t i = worker_->PickNode(*x_->upstream, *x_->nodes, x_->tried);
  if (i == upstream::RoundRobinPicker::kNone) {
    ReplyLocal(x_->attempts > 0 ? x_->attempt_status[std::min<size_t>(x_->attempts, 8) - 1] : 502,
               "");
    return;
  }
  x_->tried.Add(i);
  x_->node_index = i;
  ReportAttempt(x_->nodes->nodes[i]);
  if (x_->attempts < x_->attempt_status.size()) x_->attempt_status[x_->attempts] = 0;
  ++x_->attempts;
  ConnectNode(/*fresh=*/false);
}

void ClientConnection::ConnectNode(bool fresh) {
  const upstream::Node& node = x_->nodes->nodes[x_->node_index];
  PoolKey key;
  std::memcpy(&key.addr, &node.addr, node.addr_len);
  key.len = node.addr_len;
  if (!fresh) x_->up = worker_->TakeIdle(key);
  if (x_->up != nullptr) {
    x_->ctx.facts().UpstreamConnected(uv_now(worker_->loop()), /*reused=*/true);
    x_->up->Attach(this);
    SendRequestHead();
    return;
  }
  const config::Timeout& t = timeouts();
  x_->up = UpstreamConnection::Connect(worker_, key, this, t.connect);
  if (x_->up == nullptr) FailAttempt(502, /*connect_phase=*/true);
}

void ClientConnection::OnUpstreamConnected(int status) {
  if (status < 0) {
    FailAttempt(status == UV_ETIMEDOUT ? 504 : 502, /*connect_phase=*/true);
    return;
  }
  x_->ctx.facts().UpstreamConnected(uv_now(worker_->loop()), /*reused=*/false);
  SendRequestHead();
}

void ClientConnection::FailAttempt(int status, bool connect_phase) {
  x_->ctx.facts().UpstreamEnd(status, uv_now(worker_->loop()));
  if (x_->attempts > 0 && x_->attempts <= x_->attempt_status.size())
    x_->attempt_status[x_->attempts - 1] = status;
  // A pooled connection the node closed in the meantime fails with EOF/RST (502) before any
  // byte of an answer, not with a timeout or a malformed answer.
  bool stale = x_->up != nullptr && x_->up->reused() && !connect_phase && status == 502 &&
               !x_->up->received_any();
  if (x_->up != nullptr) {
    x_->up->Close();  // cancels its write: our buffer is free again
    x_->up = nullptr;
  }
  x_->body_inflight = false;
  if (x_->resp_head_sent) {  // the client already has part of a response: nothing to recover
    Close();
    return;
  }
  bool can_retry = !x_->body_fed &&
                   (connect_phase || !x_->request_sent || Idempotent(x_->ctx.upstream_method()));
  if (can_retry && stale && !x_->stale_retry_used) {
    // A pooled connection the node had already closed: not the node's fault, so retry the
    // same node on a fresh connection without counting an attempt.
    x_->stale_retry_used = true;
    x_->request_sent = false;
    ConnectNode(/*fresh=*/true);
    return;
  }
  if (can_retry && x_->attempts <= static_cast<uint32_t>(x_->upstream->Retries(*x_->nodes))) {
    StartAttempt();
    return;
  }
  ReplyLocal(status, "");
}

void ClientConnection::ReleaseUpstream(bool reusable) {
  if (x_->up == nullptr) return;
  UpstreamConnection* up = x_->up;
  x_->up = nullptr;
  const config::KeepalivePool& pool = x_->upstream->keepalive;
  if (reusable && up->pending().empty() && up->requests() < static_cast<uint32_t>(pool.requests)) {
    up->Detach();
    if (worker_->PutIdle(up, static_cast<size_t>(pool.size), pool.idle_timeout)) return;
  }
  up->Close();
}

// $upstream_addr, $upstream_host... of the attempt on `node` (the node's resolved address,
// the Host header EncodeRequestHead will send).
void ClientConnection::ReportAttempt(const upstream::Node& node) {
  x_->ctx.facts().UpstreamAttempt(node.ip_text, node.port, UpstreamHost(node),
                                  uv_now(worker_->loop()));
}

// The Host sent to `node`: a plugin's SetUpstreamHost, else what pass_host says.
std::string_view ClientConnection::UpstreamHost(const upstream::Node& node) const {
  std::string_view set = x_->ctx.upstream_host_override();
  if (!set.empty()) return set;
  switch (x_->upstream->pass_host) {
    case config::PassHost::kNode:
      return node.host_header;
    case config::PassHost::kRewrite:
      return x_->upstream->upstream_host;
    case config::PassHost::kPass:
      break;
  }
  // x_->host is req.host normalized, so it is empty exactly when req.host is.
  return x_->req.host;
}

// ---------------------------------------------------------------- request upstream

void ClientConnection::EncodeRequestHead(std::string* out, const upstream::Node& node) {
  http::ForwardedRequest f;
  f.host = UpstreamHost(node);
  f.method = x_->ctx.upstream_method_override();
  f.target = x_->ctx.upstream_uri_override();
  f.remote_addr = x_->remote_addr;
  f.forwarded_host = x_->req.host;
  f.local_port = local_.port;
  f.trusted_peer = peer_trusted_;
  f.drop_client_forwarded_for = x_->snapshot->addresses.has_trusted && !peer_trusted_;
  f.edits = x_->phases_ran ? &x_->ctx.request_edits() : nullptr;
  http::EncodeForwardedRequestHead(x_->req, f, out);
}

void ClientConnection::SendRequestHead() {
  const upstream::Node& node = x_->nodes->nodes[x_->node_index];
  EncodeRequestHead(&x_->up_request_head, node);
  x_->up->CountRequest();
  x_->up_parser.Reset(x_->ctx.upstream_method() == base::Method::kHead);
  x_->up_scan_pos = 0;
  x_->resp_head_parsed = false;
  x_->up_bufs.clear();
  x_->up_bufs.push_back(Buf(x_->up_request_head));
  AppendBufferedBody();
  int rc = AppendRequestBody();
  if (rc != 0) {
    x_->up->Close();
    x_->up = nullptr;
    keep_alive_ = false;
    ReplyLocal(rc, "");
    return;
  }
  x_->request_sent = true;
  x_->body_inflight = x_->up_bufs.size() > 1;
  const config::Timeout& t = timeouts();
  x_->up->ArmTimer(t.send);
  x_->up->StartReading();
  x_->up->Write(x_->up_bufs.data(),
                static_cast<unsigned>(x_->up_bufs.size()));  // may complete here
}

// The body read before routing goes first, framed as the request's own; it stays in
// body_buf, so every attempt sends it again.
void ClientConnection::AppendBufferedBody() {
  if (!x_->body_buffered) return;
  bool chunked = x_->req.framing == http::Framing::kChunked;
  if (!x_->body_buf.empty()) {
    if (chunked) {
      char* h = x_->body_buf_chunk_head.data();
      auto [p, ec] = std::to_chars(h, h + 16, x_->body_buf.size(), 16);
      *p++ = '\r';
      *p++ = '\n';
      x_->up_bufs.push_back(core::IoBuf(h, static_cast<size_t>(p - h)));
    }
    x_->up_bufs.push_back(Buf(x_->body_buf));
    if (chunked) x_->up_bufs.push_back(Buf(kCrlf));
  }
  // Complete already: AppendRequestBody adds nothing, so the last chunk is ours to send.
  if (chunked && x_->req_body_done) x_->up_bufs.push_back(Buf(kLastChunk));
}

int ClientConnection::AppendRequestBody() {
  if (x_->req_body_done) return 0;
  x_->spans.clear();
  http::BodyChunk r = x_->parser.FeedBody(buf_ + begin_, end_ - begin_, &x_->spans);
  if (r.error) return 400;
  begin_ += r.consumed;
  for (std::string_view s : x_->spans) x_->body_bytes += s.size();
  if (!x_->spans.empty()) x_->body_fed = true;
  uint64_t max_body = worker_->gateway().client_max_body_size;
  if (max_body != 0 && x_->body_bytes > max_body) return 413;
  bool chunked = x_->req.framing == http::Framing::kChunked;
  AppendSpans(x_->spans, chunked, &x_->req_chunk_heads, &x_->up_bufs);
  if (r.complete) {
    x_->req_body_done = true;
    if (chunked) x_->up_bufs.push_back(Buf(kLastChunk));
  }
  return 0;
}

void ClientConnection::ForwardRequestBody() {
  if (x_->req_body_done || x_->up == nullptr || !x_->up->connected() || x_->up->writing() ||
      x_->resp_done) {
    StopReading();  // keep it buffered (pipelined request, or waiting for the upstream)
    return;
  }
  x_->up_bufs.clear();
  int rc = AppendRequestBody();
  if (rc != 0) {
    if (x_->resp_head_sent) {
      Close();
    } else {
      x_->up->Close();
      x_->up = nullptr;
      keep_alive_ = false;
      ReplyLocal(rc, "");
    }
    return;
  }
  if (x_->up_bufs.empty()) return;  // only framing bytes so far: read on
  StopReading();                    // back-pressure: no more body until the node took this piece
  x_->body_inflight = true;
  conn_.DisarmTimer();
  const config::Timeout& t = timeouts();
  x_->up->ArmTimer(t.send);
  x_->up->Write(x_->up_bufs.data(),
                static_cast<unsigned>(x_->up_bufs.size()));  // may complete here
}

void ClientConnection::OnUpstreamWritten(int status) {
  x_->body_inflight = false;
  if (status < 0) {
    if (x_->resp_head_parsed) {
      // The node answered early and stopped reading our body; the response still flows.
      return;
    }
    FailAttempt(502, /*connect_phase=*/false);
    return;
  }
  if (x_->resp_done) return;
  const config::Timeout& t = timeouts();
  if (!x_->req_body_done) {
    // More body to come from the client: the client's pace now, not the node's.
    x_->up->StopTimer();
    StartReading();
    ArmTimer(worker_->gateway().client_body_timeout);
    if (begin_ < end_) ForwardRequestBody();
    return;
  }
  if (!x_->resp_head_sent || !response_writing()) x_->up->ArmTimer(t.read);
}

// ---------------------------------------------------------------- response downstream

void ClientConnection::OnUpstreamData() {
  if (response_writing()) {  // back-pressure: the client has not taken the previous piece yet
    x_->up->StopReading();
    return;
  }
  ProcessResponse();
}

void ClientConnection::ProcessResponse() {
  const config::Timeout& t = timeouts();
  x_->client_bufs.clear();
  while (!x_->resp_head_parsed) {
    std::string_view data = x_->up->pending();
    size_t head_len = http::FindHeadEnd(data, &x_->up_scan_pos);
    if (head_len == 0) {
      if (x_->up->buffer_full())
        FailAttempt(502, false);  // response head too large
      else
        x_->up->ArmTimer(t.read);
      return;
    }
    if (!x_->up_parser.ParseHead(data.data(), head_len, &x_->up_head)) {
      FailAttempt(502, false);
      return;
    }
    int status = x_->up_head.status;
    if (status >= 100 && status < 200) {  // interim response: not forwarded
      x_->up->Consume(head_len);
      x_->up_scan_pos = 0;
      x_->up_parser.Reset(x_->ctx.upstream_method() == base::Method::kHead);
      continue;
    }
    x_->resp_head_parsed = true;
    x_->ctx.facts().UpstreamHeader(status, uv_now(worker_->loop()));
    if (x_->attempts > 0 && x_->attempts <= x_->attempt_status.size()) {
      x_->attempt_status[x_->attempts - 1] = static_cast<uint16_t>(status);
    }
    EncodeResponseHead();
    x_->up->Consume(head_len);
    x_->client_bufs.push_back(Buf(x_->out));
  }
  if (!AppendResponseBody()) return;
  if (!x_->client_bufs.empty()) {
    x_->resp_head_sent = true;
    // Reading from the node goes on until more data arrives during this write (then
    // OnUpstreamData stops it): small responses cost no epoll_ctl calls.
    x_->up->set_pinned(true);
    x_->up->StopTimer();
    WriteClient();
    return;
  }
  if (x_->resp_done) {
    OnResponseWritten();
  } else {
    x_->up->ArmTimer(t.read);
  }
}

void ClientConnection::EncodeResponseHead() {
  const http::ResponseHead& r = x_->up_head;
  x_->resp_status = r.status;
  bool no_body = http::ResponseHasNoBody(r.status, x_->req.method == base::Method::kHead);
  if (x_->phases_ran) {
    x_->ctx.SetUpstreamResponseHeaders(&r.headers);
    RunHeaderFilters(r.status);  // may replace resp_status
  }
  bool body_modified = x_->phases_ran && x_->ctx.body_modified() && !no_body;
  http::ResponseHeadOptions o;
  o.status = x_->resp_status;
  if (x_->resp_status == r.status) o.reason = r.reason;
  o.server_line = worker_->server_header();
  o.edits = x_->phases_ran ? &x_->ctx.response_edits() : nullptr;
  if (r.status >= 500 || worker_->gateway().show_upstream_status_in_response_header) {
    o.upstream_statuses = UpstreamStatuses();
  }
  if (no_body) {
    o.framing = http::BodyFraming::kNoBody;
  } else if (r.framing == http::Framing::kContentLength && !body_modified) {
    o.content_length = r.content_length;
  } else if (r.framing == http::Framing::kNone && !body_modified) {
    o.content_length = 0;
  } else if (x_->req.version_minor >= 1) {
    o.framing = http::BodyFraming::kChunked;
  } else {
    o.framing = http::BodyFraming::kUntilClose;
    keep_alive_ = false;
  }
  x_->resp_framing = o.framing;
  if (!x_->req_body_done) keep_alive_ = false;  // the rest of the request body is not read
  if (worker_->draining()) keep_alive_ = false;
  o.keep_alive = keep_alive_;
  o.http10_client = x_->req.version_minor == 0;
  http::EncodeProxiedResponseHead(r, o, &x_->out);
}

// Returns false when the exchange was ended here (error handled).
bool ClientConnection::AppendResponseBody() {
  std::string_view data = x_->up->pending();
  if (x_->resp_done || (data.empty() && !x_->up_parser.message_complete())) {
    if (x_->up_parser.message_complete()) x_->resp_done = true;
    return true;
  }
  x_->spans.clear();
  http::BodyChunk r = x_->up_parser.FeedBody(data.data(), data.size(), &x_->spans);
  if (r.error) {
    if (x_->resp_head_sent || !x_->client_bufs.empty()) {
      // The head is out (or about to be): a broken body can only end the connection.
      if (!x_->resp_head_sent) {
        x_->client_bufs.clear();
        FailAttempt(502, false);
      } else {
        Close();
      }
    } else {
      FailAttempt(502, false);
    }
    return false;
  }
  x_->up->Consume(r.consumed);
  if (body_filters_active()) {
    // Filters may change the bytes: run every piece through them into one buffer.
    x_->filtered.clear();
    bool ended = false;
    if (x_->spans.empty() && r.complete) {
      ended = FilterBody({}, !x_->phases.body_started(), true, &x_->filtered);
    }
    for (size_t i = 0; i < x_->spans.size() && !ended; ++i) {
      bool last = r.complete && i + 1 == x_->spans.size();
      ended = FilterBody(x_->spans[i], !x_->phases.body_started(), last, &x_->filtered);
    }
    x_->spans.clear();
    if (!x_->filtered.empty()) x_->spans.push_back(x_->filtered);
    if (ended) {
      // A filter ended the body: the rest from the node is not wanted, so the connection
      // cannot be reused.
      r.complete = true;
      x_->up_discard = true;
    }
  }
  AppendSpans(x_->spans, x_->resp_chunked(), &x_->resp_chunk_heads, &x_->client_bufs);
  if (r.complete) {
    x_->resp_done = true;
    if (x_->resp_chunked()) x_->client_bufs.push_back(Buf(kLastChunk));
  }
  return true;
}

void ClientConnection::OnResponseWritten() {
  if (x_->up != nullptr) x_->up->set_pinned(false);
  if (x_->up_eof_pending) {
    x_->up_eof_pending = false;
    OnUpstreamEof(UV_EOF);
    return;
  }
  if (!x_->resp_done) {
    if (x_->up == nullptr) {
      Close();
      return;
    }
    x_->up->StartReading();
    const config::Timeout& t = timeouts();
    x_->up->ArmTimer(t.read);
    if (!x_->up->pending().empty()) ProcessResponse();
    return;
  }
  x_->ctx.facts().UpstreamEnd(0, uv_now(worker_->loop()));
  bool reusable = x_->up != nullptr && !x_->up_discard && x_->up_head.keep_alive &&
                  x_->req_body_done && x_->resp_framing != http::BodyFraming::kUntilClose &&
                  !x_->up->writing() && !worker_->draining();
  if (!x_->req_body_done) keep_alive_ = false;
  FinishExchange(reusable);
}

void ClientConnection::OnUpstreamEof(int /*status*/) {
  if (response_writing()) {  // finish the write in flight first
    x_->up_eof_pending = true;
    return;
  }
  if (!x_->resp_head_parsed) {
    FailAttempt(502, /*connect_phase=*/false);
    return;
  }
  if (x_->up_parser.FinishAtEof()) {  // body delimited by close
    x_->resp_done = true;
    x_->up->StopReading();
    x_->client_bufs.clear();
    if (x_->resp_chunked()) x_->client_bufs.push_back(Buf(kLastChunk));
    x_->up->Close();
    x_->up = nullptr;
    if (!x_->client_bufs.empty()) {
      WriteClient();
    } else {
      OnResponseWritten();
    }
    return;
  }
  Close();  // truncated response: the client sees the connection end
}

void ClientConnection::OnUpstreamTimeout() {
  if (x_->up == nullptr) return;
  if (!x_->up->connected()) {
    FailAttempt(504, /*connect_phase=*/true);
  } else if (!x_->resp_head_parsed) {
    FailAttempt(504, /*connect_phase=*/false);
  } else {
    Close();  // stalled in the middle of a response
  }
}

}  // namespace turnpike::proxy
