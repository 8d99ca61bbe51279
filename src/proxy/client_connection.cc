#include "proxy/client_connection.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "base/strings.h"
#include "http/response_encoder.h"
#include "http/uri.h"
#include "proxy/upstream_connection.h"

namespace turnpike::proxy {
namespace {

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
constexpr double kLingerSeconds = 2;

// Lowercases `raw` Host into `out`, without port ("Example.com:8080" -> "example.com",
// "[::1]:80" -> "[::1]").
void NormalizeHost(std::string_view raw, std::string* out) {
  out->clear();
  if (!raw.empty() && raw.front() == '[') {
    size_t close = raw.find(']');
    raw = raw.substr(0, close == std::string_view::npos ? raw.size() : close + 1);
  } else {
    size_t colon = raw.find(':');
    if (colon != std::string_view::npos) raw = raw.substr(0, colon);
  }
  for (char c : raw) out->push_back(base::AsciiLower(c));
}

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ClientConnection::ClientConnection(Worker* worker) : worker_(worker) {}

ClientConnection::~ClientConnection() {
  if (x_ != nullptr) {
    ReleaseBodyBuffer();
    ReleasePins();
    x_->up = nullptr;
    if (!worker_->ReturnExchange(x_)) delete x_;  // closed for good: nothing refers to it
  }
  FreeBuffer();
}

// ---------------------------------------------------------------- what a request borrows

void ClientConnection::AcquireExchange() {
  if (x_ != nullptr) return;
  x_ = worker_->TakeExchange();
  x_->ctx.SetPauseTarget(&worker_->pauses(), this);  // for as long as it is lent to us
}

// Between requests (FinishExchange has dropped the pin, the upstream and the body buffer).
void ClientConnection::ReleaseExchange() {
  if (x_ != nullptr && worker_->ReturnExchange(x_)) x_ = nullptr;
}

void ClientConnection::FreeBuffer() {
  if (buf_ == nullptr) return;
  if (cap_ == Worker::kClientBufferSize) {
    worker_->client_buffers().Return(buf_);
  } else {
    delete[] buf_;  // grown for a large head
  }
  buf_ = nullptr;
  cap_ = begin_ = end_ = scan_pos_ = 0;
}

// An idle connection holds no read buffer: it takes one at its next read (OnAlloc). Between
// requests nothing refers to the buffer (a kept exchange's old views are never read again).
void ClientConnection::ReleaseBufferIfIdle() {
  if (begin_ == end_ && state_ == State::kReadingHead) FreeBuffer();
}

ClientConnection* ClientConnection::Accept(Worker* worker, uv_stream_t* server) {
  auto* c = new ClientConnection(worker);
  c->conn_.Init(worker->loop(), c);
  if (c->conn_.Accept(server) != 0) {
    c->state_ = State::kClosed;
    c->conn_.Close();  // OnClosed frees it
    return nullptr;
  }
  c->conn_.PeerAddress(&c->peer_);
  c->conn_.LocalAddress(&c->local_);
  c->conn_info_ = {c->peer_.ip, c->peer_.port, c->local_.ip, c->local_.port};
  c->StartReading();
  c->head_deadline_set_ = true;
  c->ArmTimer(worker->gateway().client_header_timeout);
  return c;
}

// ---------------------------------------------------------------- lifetime

void ClientConnection::Close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  if (x_ != nullptr) {
    worker_->pauses().Cancel(x_->ctx.pause_handle());  // a paused plugin's Resume() is void
    if (x_->up != nullptr) {
      x_->up->Close();
      x_->up = nullptr;
    }
    ReleasePins();
  }
  conn_.Close();
  worker_->OnClientClosed(this);
}

void ClientConnection::OnClosed() { delete this; }

void ClientConnection::Drain() {
  if (state_ == State::kReadingHead) {
    Close();  // between requests (or mid-head): nothing in flight
  } else {
    keep_alive_ = false;  // answer the current request, then close
  }
}

void ClientConnection::LingerAndClose() {
  // Half-close and discard what the client still sends, so the response is not destroyed by
  // a RST for unread data (nginx's lingering close).
  state_ = State::kLingering;
  begin_ = end_ = 0;
  conn_.Shutdown();  // a failure closes (OnShutdown), possibly inside this call
  if (state_ == State::kClosed) return;
  StartReading();
  ArmTimer(kLingerSeconds);
}

void ClientConnection::OnShutdown(int status) {
  if (status < 0 && state_ != State::kClosed) Close();
}

// ---------------------------------------------------------------- reading

void ClientConnection::StartReading() {
  if (state_ != State::kClosed) conn_.StartReading();
}

void ClientConnection::OnReadBuffer(size_t, uv_buf_t* buf) {
  if (buf_ == nullptr) {
    buf_ = worker_->client_buffers().Take();
    cap_ = Worker::kClientBufferSize;
    begin_ = end_ = scan_pos_ = 0;
  }
  // Buffered bytes never move while something refers to them: the request head's views
  // during an exchange, body bytes an upstream write is sending.
  if (state_ == State::kLingering) begin_ = end_ = 0;
  if (begin_ == end_ && state_ == State::kReadingHead) begin_ = end_ = 0;
  if (begin_ == end_ && state_ == State::kReadingBody) begin_ = end_ = head_end_;
  if (begin_ == end_ && state_ == State::kProxying && !x_->body_inflight) {
    begin_ = end_ = head_end_;
  }
  // A full buffer gives a zero-length one: reading stops until the consumer made room.
  *buf = core::IoBuf(buf_ + end_, cap_ - end_);
}

void ClientConnection::OnRead(char*, size_t len) {
  end_ += len;
  OnData();
}

// Nothing to read after all (EAGAIN): an idle connection gives its buffer back.
void ClientConnection::OnReadBufferUnused(const uv_buf_t&) { ReleaseBufferIfIdle(); }

// EOF or error: the client is gone (mid-exchange this aborts the upstream side too).
void ClientConnection::OnReadEnd(int) { Close(); }

void ClientConnection::OnData() {
  switch (state_) {
    case State::kReadingHead:
      ProcessHead();
      break;
    case State::kReadingBody:
      ReadBody();
      break;
    case State::kProxying:
      ForwardRequestBody();
      break;
    case State::kLingering:
      begin_ = end_ = 0;
      break;
    default:
      break;  // a local reply is being written: input stays buffered for the next request
  }
}

void ClientConnection::Compact() {
  if (begin_ == 0) return;
  std::memmove(buf_, buf_ + begin_, end_ - begin_);
  end_ -= begin_;
  begin_ = 0;
}

bool ClientConnection::Grow(size_t new_cap) {
  if (new_cap <= cap_) return false;
  char* bigger = new char[new_cap];
  std::memcpy(bigger, buf_ + begin_, end_ - begin_);
  size_t len = end_ - begin_;
  FreeBuffer();
  buf_ = bigger;
  end_ = len;
  begin_ = 0;
  cap_ = new_cap;
  return true;
}

void ClientConnection::ProcessHead() {
  // RFC 9112 §2.2: empty lines before a request line are ignored (clients add CRLF after a
  // POST body); dropping them here keeps them from looking like an empty head.
  // A request line never starts with CR, so a buffer starting with CRLF has no head yet.
  while (end_ - begin_ >= 2 && buf_[begin_] == '\r' && buf_[begin_ + 1] == '\n') {
    begin_ += 2;
    scan_pos_ = 0;
  }
  std::string_view data(buf_ + begin_, end_ - begin_);
  size_t head_len = http::FindHeadEnd(data, &scan_pos_);
  size_t line_len = http::FirstLineLength(data);
  bool line_too_long = line_len > kMaxRequestLine;
  if (line_too_long || (head_len == 0 ? data.size() > kMaxHead : head_len > kMaxHead)) {
    // No head was parsed: answer from a blank request and read nothing more.
    AcquireExchange();
    x_->req.Clear();
    x_->req_body_done = true;
    x_->attempts = 0;
    keep_alive_ = false;
    x_->start_ms = uv_now(worker_->loop());
    x_->bytes_sent = 0;
    x_->body_bytes = 0;
    x_->resp_status = 0;
    x_->phases_ran = false;
    x_->remote_addr = peer_.ip;
    BeginUnroutedRequest(data.size());
    ReplyLocal(line_too_long ? 414 : 431, "");
    return;
  }
  if (head_len == 0) {
    if (end_ == cap_) {
      if (begin_ > 0) {
        Compact();
      } else {
        Grow(kMaxHead + 16 * 1024);
      }
    }
    StartReading();
    // nginx's client_header_timeout: the whole head within the timeout from its first byte
    // (from accept for a connection's first request), however it trickles in. Re-arming on
    // every read would let a slowloris client hold the connection forever.
    if (!head_deadline_set_ && begin_ < end_) {
      head_deadline_set_ = true;
      ArmTimer(worker_->gateway().client_header_timeout);
    }
    return;
  }
  // Leave room after the head for streaming the body: the head's views must not move
  // during the exchange.
  constexpr size_t kMinBodyRoom = 8 * 1024;
  if (begin_ + head_len + kMinBodyRoom > cap_) {
    if (!Grow(head_len + kMinBodyRoom > kInitialBuffer ? head_len + 16 * 1024 : kInitialBuffer)) {
      Compact();
    }
  }
  HandleRequest(head_len);
}

// ---------------------------------------------------------------- one request

void ClientConnection::HandleRequest(size_t head_len) {
  AcquireExchange();
  // Reading goes on (stopping and restarting costs epoll_ctl calls per request); input that
  // arrives during the exchange is either body, or stays buffered as the next request.
  conn_.DisarmTimer();
  head_deadline_set_ = false;
  int err = x_->parser.ParseHead(buf_ + begin_, head_len, &x_->req);
  begin_ += head_len;
  head_end_ = begin_;
  scan_pos_ = 0;
  ++requests_;
  x_->route = nullptr;
  x_->remote_addr = peer_.ip;
  x_->phases_ran = false;
  x_->phases.Begin({}, 0, nullptr);  // no chains until routing
  x_->start_ms = uv_now(worker_->loop());
  x_->bytes_sent = 0;
  x_->body_bytes = 0;
  x_->resp_status = 0;
  worker_->mutable_stats().requests.fetch_add(1, std::memory_order_relaxed);
  keep_alive_ = x_->req.keep_alive && !worker_->draining();
  x_->req_body_done = x_->req.framing == http::Framing::kNone;
  x_->attempts = 0;
  if (err != 0) {
    keep_alive_ = false;
    x_->req_body_done = true;  // unknown framing: nothing more is read
    BeginUnroutedRequest(head_len);
    ReplyLocal(err, "");
    return;
  }
  uint64_t max_body = worker_->gateway().client_max_body_size;
  if (max_body != 0 && x_->req.framing == http::Framing::kContentLength &&
      x_->req.content_length > max_body) {
    keep_alive_ = false;
    BeginUnroutedRequest(head_len);
    ReplyLocal(413, "");
    return;
  }
  if (http::IsNormalPath(x_->req.path)) {
    x_->uri = x_->req.path;
  } else if (http::NormalizePath(x_->req.path, &x_->uri_scratch)) {
    x_->uri = x_->uri_scratch;
  } else {
    keep_alive_ = false;
    BeginUnroutedRequest(head_len);
    ReplyLocal(400, "");
    return;
  }
  NormalizeHost(x_->req.host, &x_->host);
  x_->snapshot = worker_->snapshot();
  x_->worker_states = worker_->worker_states().Pin();  // the same snapshot's states
  RefreshPeerRules();
  x_->remote_addr = ResolveRemoteAddr();
  x_->ctx.Begin(&conn_info_, &x_->req, x_->uri, x_->host, x_->remote_addr);
  x_->ctx.facts().Begin(x_->start_ms, WallMs(), head_len);
  x_->continue_sent = false;
  if (!x_->req_body_done && (x_->snapshot->needs_post_args || x_->snapshot->needs_request_body)) {
    std::optional<std::string_view> type = x_->ctx.Header("content-type");
    if (x_->snapshot->needs_request_body || (type && RequestContext::IsFormContentType(*type))) {
      StartReadingBody();  // the body first (RouteRequest follows)
      return;
    }
  }
  RouteRequest();
}

// A request answered before routing (a bad or oversized head, a body over the limit, a path
// that does not normalize): its variables describe what was read, with the raw path as $uri
// and the peer as $remote_addr, for the log phase and the access log.
void ClientConnection::BeginUnroutedRequest(size_t head_len) {
  x_->ctx.Begin(&conn_info_, &x_->req, x_->req.path, {}, peer_.ip);
  x_->ctx.facts().Begin(x_->start_ms, WallMs(), head_len);
}

// Routing, rewrite/access and the start of the exchange with the chosen upstream.
void ClientConnection::RouteRequest() {
  std::string_view match_path = x_->uri;
  if (x_->snapshot->delete_uri_tail_slash && match_path.size() > 1 && match_path.back() == '/') {
    match_path.remove_suffix(1);
  }
  x_->match_info = {};
  // Parameters land in the request context directly: uri_param_* for `vars` and plugins.
  uint32_t idx = x_->snapshot->table->Match({x_->req.method, x_->host, match_path}, this,
                                            &x_->ctx.params(), &x_->match_info);
  x_->route = idx == router::RouteTable::kNoMatch ? nullptr : &x_->snapshot->routes[idx];
  x_->ctx.SetRoute(x_->route);
  RunRequestPhases(/*resume=*/false);
}

// The request phases let the request through: on to the route's upstream.
void ClientConnection::ForwardToUpstream() {
  if (x_->route == nullptr) {
    ReplyLocal(404, "404 Route Not Found");
    return;
  }
  x_->upstream = x_->route->upstream;
  if (x_->route->fail_status != 0) {  // missing service (404), plugin config (503), upstream
    ReplyLocal(x_->route->fail_status, "");
    return;
  }
  x_->nodes = worker_->CurrentNodes(*x_->upstream);  // the pin: one refcount per request
  if (x_->nodes->nodes.empty()) {
    ReplyLocal(503, "");
    return;
  }
  state_ = State::kProxying;
  x_->tried.Clear();
  x_->stale_retry_used = false;
  x_->request_sent = false;
  x_->body_fed = false;
  x_->body_inflight = false;  // body_bytes counts from HandleRequest (a body read before routing)
  x_->resp_head_parsed = x_->resp_head_sent = x_->resp_done = false;
  x_->resp_framing = http::BodyFraming::kContentLength;
  x_->up_eof_pending = false;
  x_->up_discard = false;
  x_->first_attempt_ms = uv_now(worker_->loop());
  if (x_->req.expect_continue && !x_->req_body_done && !x_->continue_sent) SendContinue();
  StartAttempt();
}

// Before any response write of the request (so the connection's one write slot is free).
void ClientConnection::SendContinue() {
  x_->continue_sent = true;
  continue_inflight_ = true;
  uv_buf_t b = core::IoBuf(kContinue);
  conn_.Write(&b, 1);  // OnWritten: usually inside this call (libuv copies the array)
}

// ---------------------------------------------------------------- a body read before routing

// A form body while the snapshot has post_arg_* readers is read before routing, as APISIX's
// ngx.req.read_body(): its decoded bytes go into body_buf (a worker pool buffer), up to
// client_body_buffer_size. The exchange then forwards body_buf first (on every attempt) and
// streams whatever the client still sends after it.
void ClientConnection::StartReadingBody() {
  state_ = State::kReadingBody;
  x_->body_buf = worker_->TakeBodyBuffer();
  x_->body_buffered = true;
  uint64_t want = worker_->gateway().client_body_buffer_size + 1;
  if (x_->req.framing == http::Framing::kContentLength)
    want = std::min(want, x_->req.content_length);
  if (x_->body_buf.capacity() < want) x_->body_buf.reserve(want);
  if (x_->req.expect_continue) SendContinue();
  ReadBody();
}

void ClientConnection::ReadBody() {
  const uint64_t limit = worker_->gateway().client_body_buffer_size;
  while (begin_ < end_ && !x_->req_body_done && x_->body_buf.size() <= limit) {
    // Framing only adds bytes, so feeding no more than the room left keeps the buffer within
    // one byte of the limit; that byte past it says "over the limit".
    size_t room = static_cast<size_t>(limit - x_->body_buf.size());
    size_t n = std::min(end_ - begin_, std::max<size_t>(room, 1));
    x_->spans.clear();
    http::BodyChunk r = x_->parser.FeedBody(buf_ + begin_, n, &x_->spans);
    if (r.error) {
      keep_alive_ = false;
      x_->req_body_done = true;  // unknown framing: nothing more is read
      ReplyLocal(400, "");
      return;
    }
    begin_ += r.consumed;
    for (std::string_view s : x_->spans) x_->body_buf.append(s);
    x_->req_body_done = r.complete;
  }
  uint64_t max_body = worker_->gateway().client_max_body_size;
  if (max_body != 0 && x_->body_buf.size() > max_body) {
    keep_alive_ = false;
    ReplyLocal(413, "");
    return;
  }
  if (!x_->req_body_done && x_->body_buf.size() <= limit) {
    StartReading();
    ArmTimer(worker_->gateway().client_body_timeout);  // between two reads, as nginx
    return;
  }
  // Whole, or over the limit: then post_arg_* stay nil (APISIX: the body went to a temp file)
  // and the rest streams behind body_buf.
  conn_.DisarmTimer();
  x_->body_bytes = x_->body_buf.size();
  if (x_->req_body_done && x_->body_buf.size() <= limit) {
    x_->ctx.SetBufferedBody(x_->body_buf);
    x_->ctx.facts().SetRequestBody(x_->body_buf);  // $request_body, as nginx's in-memory body
  }
  RouteRequest();
}

void ClientConnection::ReleaseBodyBuffer() {
  if (!x_->body_buffered) return;
  x_->body_buffered = false;
  worker_->ReturnBodyBuffer(std::move(x_->body_buf));
  x_->body_buf = std::string();
}

// `params` is ctx.params() (see HandleRequest), already holding this candidate's values.
bool ClientConnection::Accept(uint32_t payload, const router::PathParams&) {
  const Route& r = x_->snapshot->routes[payload];
  if (r.remote_addrs && !r.remote_addrs->Match(x_->remote_addr)) return false;
  return r.vars == nullptr || r.vars->Eval(x_->ctx);
}

// nginx's realip module: a peer listed in real_ip_from may name the client in
// real_ip_header. For a list (X-Forwarded-For) the last address is taken, or with
// real_ip_recursive the last one not itself in real_ip_from. Anything that is not an IP is
// ignored (the peer stays the client).
void ClientConnection::RefreshPeerRules() {
  if (peer_rules_version_ == x_->snapshot->version) return;
  const AddressRules& rules = x_->snapshot->addresses;
  peer_real_ip_from_ = rules.real_ip_from.Match(peer_.ip);
  peer_trusted_ = rules.has_trusted && rules.trusted.Match(peer_.ip);
  peer_rules_version_ = x_->snapshot->version;
}

std::string_view ClientConnection::ResolveRemoteAddr() const {
  const AddressRules& rules = x_->snapshot->addresses;
  std::string_view peer = peer_.ip;
  if (!peer_real_ip_from_) return peer;
  auto is_ip = [](std::string_view v) {
    uint32_t v4;
    expr::IpMatcher::V6 v6;
    return expr::IpMatcher::ParseV4(v, &v4) || expr::IpMatcher::ParseV6(v, &v6);
  };
  for (const http::Header& h : x_->req.headers) {
    if (!base::EqualsIgnoreCase(h.name, rules.real_ip_header)) continue;
    std::string_view list = h.value;
    std::string_view candidate;
    for (;;) {
      size_t comma = list.rfind(',');
      std::string_view item =
          base::TrimWhitespace(comma == std::string_view::npos ? list : list.substr(comma + 1));
      if (!is_ip(item)) break;
      candidate = item;
      if (!rules.real_ip_recursive || !rules.real_ip_from.Match(item) ||
          comma == std::string_view::npos) {
        break;
      }
      list = list.substr(0, comma);
    }
    return candidate.empty() ? peer : candidate;
  }
  return peer;
}

bool ClientConnection::SkipRequestBody() {
  if (x_->req_body_done) return true;
  http::BodyChunk r = x_->parser.FeedBody(buf_ + begin_, end_ - begin_, nullptr);
  if (r.error) return false;
  begin_ += r.consumed;
  x_->req_body_done = r.complete;
  return r.complete;
}

void ClientConnection::ReplyLocal(int status, std::string_view message) {
  // Turnpike's own answers: {"error_msg":"<message>"}\n, message "<status> <reason>" by
  // default.
  x_->local_body.assign("{\"error_msg\":\"");
  if (message.empty()) {
    base::AppendDecimal(&x_->local_body, static_cast<uint64_t>(status));
    x_->local_body.push_back(' ');
    x_->local_body.append(http::ReasonPhrase(status));
  } else {
    x_->local_body.append(message);
  }
  x_->local_body.append("\"}\n");
  SendLocal(status, x_->local_body, "application/json");
}

void ClientConnection::SendLocal(int status, std::string_view body, std::string_view content_type) {
  state_ = State::kLocalReply;
  x_->resp_status = status;
  if (!x_->req_body_done && !SkipRequestBody()) keep_alive_ = false;
  if (worker_->draining()) keep_alive_ = false;
  if (x_->phases_ran) {
    RunHeaderFilters(status);
    status = x_->resp_status;  // a filter may have replaced it
  }
  // Body filters see local answers too (APISIX runs them on its own exits).
  if (x_->phases_ran && body_filters_active()) {
    x_->filtered.clear();
    FilterBody(body, true, true, &x_->filtered);
    body = x_->filtered;
  }
  http::ResponseHeadOptions o;
  o.status = status;
  o.server_line = worker_->server_header();
  o.edits = x_->phases_ran ? &x_->ctx.response_edits() : nullptr;
  // Only an answer that stands for an upstream's failure names the upstream status (a 400
  // for a bad body in the middle of an attempt is the client's error, not the node's).
  std::span<const uint16_t> statuses = UpstreamStatuses();
  uint16_t last_status = statuses.empty() ? 0 : statuses.back();
  if (last_status != 0 &&
      (last_status >= 500 || worker_->gateway().show_upstream_status_in_response_header)) {
    o.upstream_statuses = statuses;
  }
  o.content_length = body.size();
  o.keep_alive = keep_alive_;
  o.http10_client = x_->req.version_minor == 0;
  http::EncodeLocalResponseHead(o, worker_->Date(), content_type, &x_->out);
  x_->client_bufs.clear();
  x_->client_bufs.push_back(core::IoBuf(x_->out));
  if (x_->req.method != base::Method::kHead && !body.empty()) {
    x_->client_bufs.push_back(core::IoBuf(body));
  }
  WriteClient();
}

// Writes client_bufs. Most responses fit in the socket buffer, so TcpConnection first tries
// the write synchronously: a completed write then needs no write request, no callback and no
// epoll_ctl. The completion runs in this call, so callers must not touch the exchange after
// WriteClient() returns.
void ClientConnection::WriteClient() {
  for (const uv_buf_t& b : x_->client_bufs) x_->bytes_sent += b.len;
  if (continue_inflight_) {  // rare: "100 Continue" did not go out at once
    write_deferred_ = true;
    return;
  }
  conn_.set_write_timeout(worker_->gateway().send_timeout);  // between two writes, as nginx
  conn_.Write(x_->client_bufs.data(), static_cast<unsigned>(x_->client_bufs.size()));
}

void ClientConnection::OnWritten(int status) {
  if (!continue_inflight_) {
    OnClientWriteDone(status);
    return;
  }
  continue_inflight_ = false;
  if (status < 0) {
    Close();
  } else if (write_deferred_) {
    write_deferred_ = false;
    conn_.set_write_timeout(worker_->gateway().send_timeout);
    conn_.Write(x_->client_bufs.data(), static_cast<unsigned>(x_->client_bufs.size()));
  }
}

void ClientConnection::OnClientWriteDone(int status) {
  if (state_ == State::kClosed) return;
  if (status < 0) {
    Close();
    return;
  }
  conn_.DisarmTimer();
  if (state_ == State::kLocalReply) {
    FinishExchange();
  } else if (state_ == State::kProxying) {
    OnResponseWritten();
  }
}

// send_timeout: a response write made no progress for that long.
void ClientConnection::OnWriteTimeout() { Close(); }

// Idle keep-alive, slow head, slow body or linger end: all close.
void ClientConnection::OnTimeout() { Close(); }

void ClientConnection::FinishExchange(bool upstream_reusable) {
  if (x_->phases_ran || worker_->access_log() != nullptr) RunLogPhase();
  // After the log phase: $upstream_http_* views point into the upstream connection's buffer,
  // which it gives back when pooled, and post_arg_* into the body buffer.
  ReleaseUpstream(upstream_reusable);
  ReleaseBodyBuffer();
  ReleasePins();
  x_->route = nullptr;
  x_->upstream = nullptr;
  if (!keep_alive_ || worker_->draining()) {
    LingerAndClose();
    return;
  }
  NextRequest();
}

void ClientConnection::NextRequest() {
  state_ = State::kReadingHead;
  scan_pos_ = 0;
  head_end_ = 0;
  if (begin_ == end_) {
    // Idle until the next request: the exchange and the read buffer go back to the worker.
    ReleaseExchange();
    ReleaseBufferIfIdle();
    begin_ = end_ = 0;
    StartReading();
    ArmTimer(worker_->gateway().client_keepalive_timeout);
    return;
  }
  ProcessHead();  // pipelined request already buffered
}

}  // namespace turnpike::proxy
