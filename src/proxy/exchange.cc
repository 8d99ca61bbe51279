#include "proxy/exchange.h"

#include <algorithm>
#include <charconv>

#include "base/strings.h"
#include "core/loop_clock.h"
#include "http/request_encoder.h"
#include "http/response_encoder.h"
#include "http/uri.h"
#include "proxy/downstream_connection.h"

namespace turnpike::proxy {
namespace {

constexpr std::string_view kCrlf = "\r\n";
constexpr std::string_view kLastChunk = "0\r\n\r\n";

// Lowercases `raw` Host into `out`, without port ("Example.com:8080" -> "example.com",
// "[::1]:80" -> "[::1]").
void NormalizeHost(std::string_view raw, std::string* out) {
  if (!raw.empty() && raw.front() == '[') {
    size_t close = raw.find(']');
    raw = raw.substr(0, close == std::string_view::npos ? raw.size() : close + 1);
  } else {
    size_t colon = raw.find(':');
    if (colon != std::string_view::npos) raw = raw.substr(0, colon);
  }
  base::AssignLower(out, raw);
}

// The request's start in wall time: the worker loop's cached time, as nginx's
// ngx.req.start_time(), not a clock read per request.
int64_t WallMs() { return core::LoopClock::Instance().WallMs(); }

// "<hex>\r\n" for a chunk of `size` bytes, in `head`.
uv_buf_t ChunkHead(size_t size, std::array<char, 20>* head) {
  char* h = head->data();
  auto [p, ec] = std::to_chars(h, h + 16, size, 16);
  *p++ = '\r';
  *p++ = '\n';
  return core::IoBuf(h, static_cast<size_t>(p - h));
}

// Appends `spans` to `bufs`, framed as chunks when `chunked`; `heads` stores chunk sizes.
void AppendSpans(const std::vector<std::string_view>& spans, bool chunked,
                 std::vector<std::array<char, 20>>* heads, std::vector<uv_buf_t>* bufs) {
  if (chunked && heads->size() < spans.size()) heads->resize(spans.size());
  for (size_t i = 0; i < spans.size(); ++i) {
    if (spans[i].empty()) continue;
    if (chunked) bufs->push_back(ChunkHead(spans[i].size(), &(*heads)[i]));
    bufs->push_back(core::IoBuf(spans[i]));
    if (chunked) bufs->push_back(core::IoBuf(kCrlf));
  }
}

}  // namespace

Exchange::Exchange(Worker* worker) : worker_(worker) {
  ctx_.SetPhaseRunner(&phases_);
  ctx_.SetPauseTarget(&worker->pauses(), this);
}

// ---------------------------------------------------------------- lifetime

void Exchange::Abort() {
  worker_->pauses().Cancel(ctx_.pause_handle());  // a paused plugin's Resume() is void
  if (state_ == State::kTunnel) {
    // A tunnel's client connection closed under it (send_timeout, the drain deadline): the
    // upgraded request is over all the same, and logged as such.
    tunnel_.Close();
    bytes_sent_ += tunnel_.bytes_to_client();
    RunLogPhase();
  }
  Release();
}

void Exchange::Release(bool upstream_reusable) {
  // The upstream connection first: closing it cancels a write that still refers to the
  // body buffer. post_arg_* views point into that buffer until here.
  upstream_.Finish(upstream_reusable);
  tunnel_.Close();
  upgrade_ = {};
  ReleaseBodyBuffer();
  ReleasePins();
  route_ = nullptr;
  upstream_conf_ = nullptr;
  state_ = State::kIdle;
}

void Exchange::FinishExchange(bool upstream_reusable) {
  if (phases_ran_ || worker_->access_log() != nullptr) RunLogPhase();
  Release(upstream_reusable);
  down_->EndExchange();  // may start the next request on this exchange, or give it back
}

// ---------------------------------------------------------------- one request

// What every request starts from, whether its head parsed or not.
void Exchange::BeginRequest() {
  route_ = nullptr;
  remote_addr_ = down_->peer_ip();
  phases_ran_ = false;
  phases_.Begin({}, 0, nullptr);  // no chains until routing
  start_ms_ = uv_now(worker_->loop());
  bytes_sent_ = 0;
  body_bytes_ = 0;
  resp_status_ = 0;
}

void Exchange::Start(const char* head, size_t head_len) {
  int err = parser_.ParseHead(head, head_len, &req_);
  BeginRequest();
  worker_->mutable_stats().requests.fetch_add(1, std::memory_order_relaxed);
  if (!in_flight_) {
    in_flight_ = true;
    worker_->mutable_stats().requests_in_flight.fetch_add(1, std::memory_order_relaxed);
  }
  if (!req_.keep_alive) down_->set_keep_alive(false);
  req_body_done_ = req_.framing == http::Framing::kNone;
  if (err != 0) {
    down_->set_keep_alive(false);
    req_body_done_ = true;  // unknown framing: nothing more is read
    BeginUnroutedRequest(head_len);
    ReplyLocal(err, "");
    return;
  }
  uint64_t max_body = worker_->gateway().client_max_body_size;
  if (max_body != 0 && req_.framing == http::Framing::kContentLength &&
      req_.content_length > max_body) {
    down_->set_keep_alive(false);
    BeginUnroutedRequest(head_len);
    ReplyLocal(413, "");
    return;
  }
  if (http::IsNormalPath(req_.path)) {
    uri_ = req_.path;
  } else if (http::NormalizePath(req_.path, &uri_scratch_)) {
    uri_ = uri_scratch_;
  } else {
    down_->set_keep_alive(false);
    BeginUnroutedRequest(head_len);
    ReplyLocal(400, "");
    return;
  }
  NormalizeHost(req_.host, &host_);
  snapshot_ = worker_->snapshot();
  worker_states_ = worker_->worker_states().Pin();  // the same snapshot's states
  down_->RefreshPeerRules(*snapshot_);
  remote_addr_ = ResolveRemoteAddr();
  ctx_.Begin(&down_->info(), &req_, uri_, host_, remote_addr_);
  ctx_.facts().Begin(start_ms_, WallMs(), head_len);
  continue_sent_ = false;
  if (!req_body_done_ && (snapshot_->needs_post_args || snapshot_->needs_request_body)) {
    std::optional<std::string_view> type = ctx_.Header("content-type");
    if (snapshot_->needs_request_body || (type && RequestContext::IsFormContentType(*type))) {
      StartReadingBody();  // the body first (RouteRequest follows)
      return;
    }
  }
  RouteRequest();
}

void Exchange::Reject(int status, size_t read) {
  req_.Clear();
  BeginRequest();
  req_body_done_ = true;
  BeginUnroutedRequest(read);
  ReplyLocal(status, "");
}

// A request answered before routing (a bad or oversized head, a body over the limit, a path
// that does not normalize): its variables describe what was read, with the raw path as $uri
// and the peer as $remote_addr, for the log phase and the access log.
void Exchange::BeginUnroutedRequest(size_t head_len) {
  ctx_.Begin(&down_->info(), &req_, req_.path, {}, down_->peer_ip());
  ctx_.facts().Begin(start_ms_, WallMs(), head_len);
}

// nginx's realip module: a peer listed in real_ip_from may name the client in
// real_ip_header. For a list (X-Forwarded-For) the last address is taken, or with
// real_ip_recursive the last one not itself in real_ip_from. Anything that is not an IP is
// ignored (the peer stays the client).
std::string_view Exchange::ResolveRemoteAddr() const {
  std::string_view peer = down_->peer_ip();
  if (!down_->peer_real_ip_from()) return peer;
  const AddressRules& rules = snapshot_->addresses;
  auto is_ip = [](std::string_view v) {
    uint32_t v4;
    expr::IpMatcher::V6 v6;
    return expr::IpMatcher::ParseV4(v, &v4) || expr::IpMatcher::ParseV6(v, &v6);
  };
  for (const http::Header& h : req_.headers) {
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

void Exchange::OnData() {
  switch (state_) {
    case State::kReadingBody:
      ReadBody();
      break;
    case State::kProxying:
      ForwardRequestBody();
      break;
    case State::kTunnel:
      tunnel_.OnClientData();
      break;
    default:
      break;  // paused, or a local reply is being written: input stays buffered
  }
}

// ---------------------------------------------------------------- a body read before routing

// A form body while the snapshot has post_arg_* readers is read before routing, as APISIX's
// ngx.req.read_body(): its decoded bytes go into body_buf_ (a worker pool buffer), up to
// client_body_buffer_size. The upstream request then gets body_buf_ first (on every attempt)
// and the stream of whatever the client still sends after it.
void Exchange::StartReadingBody() {
  state_ = State::kReadingBody;
  body_buf_ = worker_->TakeBodyBuffer();
  body_buffered_ = true;
  uint64_t want = worker_->gateway().client_body_buffer_size + 1;
  if (req_.framing == http::Framing::kContentLength) want = std::min(want, req_.content_length);
  if (body_buf_.capacity() < want) body_buf_.reserve(want);
  if (req_.expect_continue) SendContinue();
  ReadBody();
}

void Exchange::ReadBody() {
  const uint64_t limit = worker_->gateway().client_body_buffer_size;
  for (std::string_view in = down_->unread();
       !in.empty() && !req_body_done_ && body_buf_.size() <= limit; in = down_->unread()) {
    // Framing only adds bytes, so feeding no more than the room left keeps the buffer within
    // one byte of the limit; that byte past it says "over the limit".
    size_t room = static_cast<size_t>(limit - body_buf_.size());
    size_t n = std::min(in.size(), std::max<size_t>(room, 1));
    spans_.clear();
    http::BodyChunk r = parser_.FeedBody(in.data(), n, &spans_);
    if (r.error) {
      down_->set_keep_alive(false);
      req_body_done_ = true;  // unknown framing: nothing more is read
      ReplyLocal(400, "");
      return;
    }
    down_->Consume(r.consumed);
    for (std::string_view s : spans_) body_buf_.append(s);
    req_body_done_ = r.complete;
  }
  uint64_t max_body = worker_->gateway().client_max_body_size;
  if (max_body != 0 && body_buf_.size() > max_body) {
    down_->set_keep_alive(false);
    ReplyLocal(413, "");
    return;
  }
  if (!req_body_done_ && body_buf_.size() <= limit) {
    down_->StartReading();
    down_->ArmTimer(worker_->gateway().client_body_timeout);  // between two reads, as nginx
    return;
  }
  // Whole, or over the limit: then post_arg_* stay nil (APISIX: the body went to a temp file)
  // and the rest streams behind body_buf_.
  down_->DisarmTimer();
  body_bytes_ = body_buf_.size();
  if (req_body_done_ && body_buf_.size() <= limit) {
    ctx_.SetBufferedBody(body_buf_);
    ctx_.facts().SetRequestBody(body_buf_);  // $request_body, as nginx's in-memory body
  }
  RouteRequest();
}

void Exchange::ReleaseBodyBuffer() {
  if (!body_buffered_) return;
  body_buffered_ = false;
  worker_->ReturnBodyBuffer(std::move(body_buf_));
  body_buf_ = std::string();
}

bool Exchange::SkipRequestBody() {
  if (req_body_done_) return true;
  std::string_view in = down_->unread();
  http::BodyChunk r = parser_.FeedBody(in.data(), in.size(), nullptr);
  if (r.error) return false;
  down_->Consume(r.consumed);
  req_body_done_ = r.complete;
  return r.complete;
}

// ---------------------------------------------------------------- routing

void Exchange::RouteRequest() {
  std::string_view match_path = uri_;
  if (snapshot_->delete_uri_tail_slash && match_path.size() > 1 && match_path.back() == '/') {
    match_path.remove_suffix(1);
  }
  match_info_ = {};
  // Parameters land in the request context directly: uri_param_* for `vars` and plugins.
  uint32_t idx =
      snapshot_->table->Match({req_.method, host_, match_path}, this, &ctx_.params(), &match_info_);
  route_ = idx == router::RouteTable::kNoMatch ? nullptr : &snapshot_->routes[idx];
  ctx_.SetRoute(route_, &match_info_);
  RunRequestPhases(/*resume=*/false);
}

// `params` is ctx_.params() (see RouteRequest), already holding this candidate's values.
bool Exchange::Accept(uint32_t payload, const router::PathParams&) {
  const Route& r = snapshot_->routes[payload];
  if (r.remote_addrs && !r.remote_addrs->Match(remote_addr_)) return false;
  return r.vars == nullptr || r.vars->Eval(ctx_);
}

// ---------------------------------------------------------------- the upstream request

// The request phases let the request through: on to the route's upstream.
void Exchange::ForwardToUpstream() {
  if (route_ == nullptr) {
    ReplyLocal(404, "404 Route Not Found");
    return;
  }
  upstream_conf_ = route_->upstream;
  if (route_->fail_status != 0) {  // missing service (404), plugin config (503), upstream
    ReplyLocal(route_->fail_status, "");
    return;
  }
  upstream::NodeSetConstSharedPtr nodes = worker_->CurrentNodes(*upstream_conf_);  // the pin
  if (nodes->nodes.empty()) {
    ReplyLocal(503, "");
    return;
  }
  state_ = State::kProxying;
  resp_framing_ = http::BodyFraming::kContentLength;
  if (req_.expect_continue && !req_body_done_ && !continue_sent_) SendContinue();
  upgrade_ = route_->enable_websocket ? UpgradeRequested() : std::string_view();
  upstream_.Start(worker_, this, &ctx_, *upstream_conf_, timeouts(), std::move(nodes), req_.host,
                  !upgrade_.empty());
}

void Exchange::SendContinue() {
  continue_sent_ = true;
  down_->SendContinue();
}

int Exchange::EncodeRequest(const upstream::Node& /*node*/, std::string_view host,
                            std::vector<uv_buf_t>* bufs) {
  EncodeRequestHead(host, &up_request_head_);
  bufs->push_back(core::IoBuf(up_request_head_));
  AppendBufferedBody(bufs);
  int rc = AppendRequestBody(bufs);
  if (rc != 0) down_->set_keep_alive(false);
  return rc;
}

void Exchange::EncodeRequestHead(std::string_view host, std::string* out) {
  http::ForwardedRequest f;
  f.host = host;
  // A plugin's host (SetUpstreamHost, under pass_host `pass`) is the override's own bytes.
  f.host_from_plugin = !host.empty() && host.data() == ctx_.upstream_host_override().data();
  f.method = ctx_.upstream_method_override();
  f.target = ctx_.upstream_uri_override();
  f.remote_addr = remote_addr_;
  f.forwarded_host = req_.host;
  f.local_port = down_->local_port();
  f.trusted_peer = down_->peer_trusted();
  f.drop_client_forwarded_for = snapshot_->addresses.has_trusted && !down_->peer_trusted();
  f.edits = phases_ran_ ? &ctx_.request_edits() : nullptr;
  f.upgrade = upgrade_;
  http::EncodeForwardedRequestHead(req_, f, out);
}

// The body read before routing goes first, framed as the request's own; it stays in
// body_buf_, so every attempt sends it again.
void Exchange::AppendBufferedBody(std::vector<uv_buf_t>* bufs) {
  if (!body_buffered_) return;
  bool chunked = req_.framing == http::Framing::kChunked;
  if (!body_buf_.empty()) {
    if (chunked) bufs->push_back(ChunkHead(body_buf_.size(), &body_buf_chunk_head_));
    bufs->push_back(core::IoBuf(body_buf_));
    if (chunked) bufs->push_back(core::IoBuf(kCrlf));
  }
  // Complete already: AppendRequestBody adds nothing, so the last chunk is ours to send.
  if (chunked && req_body_done_) bufs->push_back(core::IoBuf(kLastChunk));
}

int Exchange::AppendRequestBody(std::vector<uv_buf_t>* bufs) {
  if (req_body_done_) return 0;
  std::string_view in = down_->unread();
  spans_.clear();
  http::BodyChunk r = parser_.FeedBody(in.data(), in.size(), &spans_);
  if (r.error) return 400;
  down_->Consume(r.consumed);
  for (std::string_view s : spans_) body_bytes_ += s.size();
  if (!spans_.empty()) upstream_.set_body_streamed();
  uint64_t max_body = worker_->gateway().client_max_body_size;
  if (max_body != 0 && body_bytes_ > max_body) return 413;
  bool chunked = req_.framing == http::Framing::kChunked;
  AppendSpans(spans_, chunked, &req_chunk_heads_, bufs);
  if (r.complete) {
    req_body_done_ = true;
    if (chunked) bufs->push_back(core::IoBuf(kLastChunk));
  }
  return 0;
}

// More body from the client while proxying: up it goes, one piece at a time.
void Exchange::ForwardRequestBody() {
  if (req_body_done_ || !upstream_.ready_for_body()) {
    down_->StopReading();  // keep it buffered (pipelined request, or waiting for the node)
    return;
  }
  up_body_bufs_.clear();
  int rc = AppendRequestBody(&up_body_bufs_);
  if (rc != 0) {
    if (upstream_.response_started()) {
      down_->Close();
    } else {
      upstream_.Cancel();
      down_->set_keep_alive(false);
      ReplyLocal(rc, "");
    }
    return;
  }
  if (up_body_bufs_.empty()) return;  // only framing bytes so far: read on
  down_->StopReading();               // back-pressure: no more body until the node took this piece
  down_->DisarmTimer();
  upstream_.SendBody(&up_body_bufs_);  // may complete here
}

void Exchange::OnRequestWritten() {
  if (req_body_done_) {
    upstream_.AwaitResponse();
    return;
  }
  // More body to come from the client: the client's pace now, not the node's.
  upstream_.AwaitClientBody();
  down_->StartReading();
  down_->ArmTimer(worker_->gateway().client_body_timeout);
  if (!down_->unread().empty()) ForwardRequestBody();
}

void Exchange::OnRequestFailed(int status) { ReplyLocal(status, ""); }

void Exchange::OnResponseBroken() { down_->Close(); }

// ---------------------------------------------------------------- the response

bool Exchange::OnResponse(UpstreamRequest::ResponsePiece& piece) {
  client_bufs_.clear();
  if (piece.upgrade) state_ = State::kUpgrading;  // the tunnel starts once the 101 is out
  if (piece.head != nullptr) {
    EncodeResponseHead(*piece.head);
    client_bufs_.push_back(core::IoBuf(out_));
  }
  std::vector<std::string_view>& body = *piece.body;
  if (body_filters_active() && resp_framing_ != http::BodyFraming::kNoBody &&
      (!body.empty() || piece.complete)) {
    // Filters may change the bytes: every piece goes through them into one buffer.
    filtered_.clear();
    bool ended = false;
    if (body.empty()) ended = FilterBody({}, !phases_.body_started(), true, &filtered_);
    for (size_t i = 0; i < body.size() && !ended; ++i) {
      bool last = piece.complete && i + 1 == body.size();
      ended = FilterBody(body[i], !phases_.body_started(), last, &filtered_);
    }
    body.clear();
    if (!filtered_.empty()) body.push_back(filtered_);
    if (ended && !piece.complete) {
      piece.complete = true;  // the rest from the node is not wanted
      upstream_.Cut();
    }
  }
  AppendSpans(body, resp_chunked(), &resp_chunk_heads_, &client_bufs_);
  if (piece.complete && resp_chunked()) client_bufs_.push_back(core::IoBuf(kLastChunk));
  if (client_bufs_.empty()) return false;
  WriteClient();
  return true;
}

void Exchange::EncodeResponseHead(const http::ResponseHead& r) {
  resp_status_ = r.status;
  ctx_.SetResponseFromUpstream(true);
  bool no_body = http::ResponseHasNoBody(r.status, req_.method == base::Method::kHead);
  if (phases_ran_) {
    ctx_.SetUpstreamResponseHeaders(&r.headers);
    RunHeaderFilters(r.status);  // may replace resp_status_
    // The head's views stay valid only until the body is read on (the upstream connection
    // reuses its buffer), so ResponseHeader() is for header_filter, as documented.
    ctx_.SetUpstreamResponseHeaders(nullptr);
  }
  bool body_modified = phases_ran_ && ctx_.body_modified() && !no_body;
  http::ResponseHeadOptions o;
  o.status = resp_status_;
  if (resp_status_ == r.status) o.reason = r.reason;
  o.server_line = worker_->server_header();
  o.edits = phases_ran_ ? &ctx_.response_edits() : nullptr;
  if (r.status >= 500 || worker_->gateway().show_upstream_status_in_response_header) {
    o.upstream_statuses = upstream_.statuses();
  }
  if (no_body) {
    o.framing = http::BodyFraming::kNoBody;
  } else if (r.framing == http::Framing::kContentLength && !body_modified) {
    o.content_length = r.content_length;
  } else if (r.framing == http::Framing::kNone && !body_modified) {
    o.content_length = 0;
  } else if (req_.version_minor >= 1) {
    o.framing = http::BodyFraming::kChunked;
  } else {
    o.framing = http::BodyFraming::kUntilClose;
    down_->set_keep_alive(false);
  }
  resp_framing_ = o.framing;
  if (!req_body_done_) down_->set_keep_alive(false);  // the rest of the body is not read
  if (worker_->draining()) down_->set_keep_alive(false);
  o.keep_alive = down_->keep_alive();
  o.http10_client = req_.version_minor == 0;
  if (state_ == State::kUpgrading) {
    // The node's protocol name, as nginx passes its Upgrade header on (the client's if the
    // node sent none).
    o.upgrade = upgrade_;
    for (const http::Header& h : r.headers) {
      if (http::HeaderIdOf(h) == http::HeaderId::kUpgrade) o.upgrade = h.value;
    }
  }
  http::EncodeProxiedResponseHead(r, o, &out_);
}

void Exchange::OnResponseComplete() {
  if (!req_body_done_) down_->set_keep_alive(false);
  FinishExchange(req_body_done_ && resp_framing_ != http::BodyFraming::kUntilClose);
}

void Exchange::ReplyLocal(int status, std::string_view message) {
  // Turnpike's own answers: {"error_msg":"<message>"}\n, message "<status> <reason>" by
  // default.
  local_body_.assign("{\"error_msg\":\"");
  if (message.empty()) {
    base::AppendDecimal(&local_body_, static_cast<uint64_t>(status));
    local_body_.push_back(' ');
    local_body_.append(http::ReasonPhrase(status));
  } else {
    local_body_.append(message);
  }
  local_body_.append("\"}\n");
  SendLocal(status, local_body_, "application/json");
}

void Exchange::SendLocal(int status, std::string_view body, std::string_view content_type) {
  state_ = State::kLocalReply;
  resp_status_ = status;
  ctx_.SetResponseFromUpstream(false);
  if (!req_body_done_ && !SkipRequestBody()) down_->set_keep_alive(false);
  if (worker_->draining()) down_->set_keep_alive(false);
  if (phases_ran_) {
    RunHeaderFilters(status);
    status = resp_status_;  // a filter may have replaced it
  }
  // Body filters see local answers too (APISIX runs them on its own exits).
  if (phases_ran_ && body_filters_active()) {
    filtered_.clear();
    FilterBody(body, true, true, &filtered_);
    body = filtered_;
  }
  http::ResponseHeadOptions o;
  o.status = status;
  o.server_line = worker_->server_header();
  o.edits = phases_ran_ ? &ctx_.response_edits() : nullptr;
  // Only an answer that stands for an upstream's failure names the upstream status (a 400
  // for a bad body in the middle of an attempt is the client's error, not the node's).
  std::span<const uint16_t> statuses = upstream_.statuses();
  uint16_t last_status = statuses.empty() ? 0 : statuses.back();
  if (last_status != 0 &&
      (last_status >= 500 || worker_->gateway().show_upstream_status_in_response_header)) {
    o.upstream_statuses = statuses;
  }
  o.content_length = body.size();
  o.keep_alive = down_->keep_alive();
  o.http10_client = req_.version_minor == 0;
  http::EncodeLocalResponseHead(o, worker_->Date(), content_type, &out_);
  client_bufs_.clear();
  client_bufs_.push_back(core::IoBuf(out_));
  if (req_.method != base::Method::kHead && !body.empty()) {
    client_bufs_.push_back(core::IoBuf(body));
  }
  WriteClient();
}

void Exchange::WriteClient() {
  for (const uv_buf_t& b : client_bufs_) bytes_sent_ += b.len;
  down_->Write(client_bufs_.data(), static_cast<unsigned>(client_bufs_.size()));
}

void Exchange::OnWritten(int status) {
  if (state_ == State::kTunnel) {
    tunnel_.OnClientWritten(status);  // an error ends the tunnel (and is logged)
    return;
  }
  if (status < 0) {
    down_->Close();
    return;
  }
  down_->DisarmTimer();
  if (state_ == State::kLocalReply) {
    FinishExchange(/*upstream_reusable=*/false);
  } else if (state_ == State::kProxying) {
    upstream_.OnClientWritten();
  } else if (state_ == State::kUpgrading) {
    StartTunnel();
  }
}

// ---------------------------------------------------------------- upgrades

// An HTTP/1.1 request without a body whose Connection lists "upgrade" and that names the
// protocol in Upgrade (RFC 9110 §7.8). nginx cannot tunnel HTTP/1.0 or after a body either.
std::string_view Exchange::UpgradeRequested() const {
  if (req_.version_minor != 1 || req_.framing != http::Framing::kNone ||
      !http::IsListedIn("upgrade", req_.connection_tokens, req_.connection_token_count)) {
    return {};
  }
  for (const http::Header& h : req_.headers) {
    if (http::HeaderIdOf(h) == http::HeaderId::kUpgrade) return h.value;
  }
  return {};
}

void Exchange::StartTunnel() {
  bool node_ended = false;
  UpstreamConnection* up = upstream_.TakeConnection(&node_ended);
  state_ = State::kTunnel;
  down_->DisarmTimer();
  tunnel_.Start(down_, up, node_ended, timeouts().read, this);  // may end inside
}

bool Exchange::OnClientEnd(int status) {
  if (state_ != State::kTunnel) return false;
  tunnel_.OnClientEnd(status);
  return true;
}

void Exchange::OnTunnelEnd() {
  bytes_sent_ += tunnel_.bytes_to_client();
  ctx_.facts().UpstreamEnd(0, uv_now(worker_->loop()));
  down_->set_keep_alive(false);
  if (tunnel_.client_ended() || tunnel_.writing_to_client()) {
    // Nothing to linger for (or a write that will not finish): log, and close.
    RunLogPhase();
    state_ = State::kIdle;  // Abort below must not log again
    down_->Close();         // Abort -> Release
    return;
  }
  FinishExchange(/*upstream_reusable=*/false);  // the lingering close: the client reads EOF
}

}  // namespace turnpike::proxy
