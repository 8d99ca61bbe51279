#include "http_client/call.h"

#include <cstring>

#include "base/strings.h"

namespace turnpike::http_client {

// ---------------------------------------------------------------- Conn

Conn::Conn(Client* c, const Origin& o)
    : client(c), origin(o), buffer_size(c->options().buffer_size) {
  tcp.Init(c->loop_, this);
}

void Conn::ReleaseBuffer() {
  if (buf == nullptr) return;
  if (client != nullptr) client->buffers_.Return(buf);
  buf = nullptr;
  begin = end = 0;
}

void Conn::OnConnect(int status) {
  if (call == nullptr) return;
  if (status != 0) {
    call->Fail(status == UV_ETIMEDOUT ? Error::kConnectTimeout : Error::kConnectFailed, status);
    return;
  }
  tcp.StartReading();
  call->Send();
}

void Conn::OnReadBuffer(size_t, uv_buf_t* out) {
  if (client == nullptr) return;  // closed client: no room (cannot happen after Close)
  if (buf == nullptr) {
    buf = client->buffers_.Take();
    begin = end = 0;
  }
  if (begin == end) {
    begin = end = 0;
  } else if (end == buffer_size && begin > 0) {
    // Head bytes are copied out once parsed and body bytes are consumed as they arrive, so
    // nothing refers to the buffer between reads: the rest moves to the front.
    std::memmove(buf, buf + begin, end - begin);
    end -= begin;
    begin = 0;
  }
  *out = uv_buf_init(buf + end, static_cast<unsigned>(buffer_size - end));
}

void Conn::OnRead(char*, size_t len) {
  end += len;
  if (call == nullptr) {
    // Idle in the pool: a byte now is not an answer to anything. The connection is done.
    if (client != nullptr) client->RemoveIdle(this);
    tcp.Close();
    ReleaseBuffer();
    return;
  }
  tcp.ArmTimer(call->request.read_timeout);
  call->Process();  // may complete, fail or cancel the call, or start another one here
  if (begin == end) ReleaseBuffer();
}

void Conn::OnReadBufferUnused(const uv_buf_t&) {
  if (begin == end) ReleaseBuffer();
}

void Conn::OnReadEnd(int status) {
  if (call == nullptr) {  // idle: the server closed it
    if (client != nullptr) client->RemoveIdle(this);
    tcp.Close();
    return;
  }
  call->OnEof(status);
}

void Conn::OnWritten(int status) {
  if (call != nullptr) call->OnWritten(status);
}

void Conn::OnWriteTimeout() {
  if (call != nullptr) call->Fail(Error::kSendTimeout);
}

void Conn::OnTimeout() {
  if (call != nullptr) {
    call->Fail(Error::kReadTimeout);
    return;
  }
  if (client != nullptr) client->RemoveIdle(this);  // idle timeout
  tcp.Close();
}

void Conn::OnClosed() {
  ReleaseBuffer();
  if (client != nullptr) client->Forget(this);
  if (call != nullptr) {  // closed before it could even connect (see Client::Start)
    Call* c = call;
    call = nullptr;
    c->conn = nullptr;
    c->Finish(close_error, close_uv_error);
  }
  delete this;
}

// ---------------------------------------------------------------- Call

Call::Call(Client* c, const Origin& o, Request r, Callbacks callbacks)
    : client(c), origin(o), request(std::move(r)), cb(std::move(callbacks)) {}

Call::~Call() {
  if (destroyed_ != nullptr) *destroyed_ = true;
}

void Call::Attach(Conn* c) {
  conn = c;
  c->call = this;
  ++c->requests;
  c->tcp.DisarmTimer();  // a pooled connection's idle timeout
  parser_.Reset(request.method == "HEAD");
  head_.Clear();
  head_done_ = false;
  received_any_ = false;
  scan_pos_ = 0;
  result_.response = Response{};
}

void Call::Send() {
  bufs_[0] = uv_buf_init(head_out_.data(), static_cast<unsigned>(head_out_.size()));
  bufs_[1] = uv_buf_init(request.body.data(), static_cast<unsigned>(request.body.size()));
  conn->tcp.set_write_timeout(request.send_timeout);
  conn->tcp.Write(bufs_, request.body.empty() ? 1 : 2);  // may complete here
}

void Call::OnWritten(int status) {
  if (status < 0) {
    if (CanRetryStale()) {
      RetryFresh();
    } else {
      Fail(Error::kConnectionClosed, status);
    }
    return;
  }
  // The whole request is out: from now on the server has read_timeout between two reads.
  conn->tcp.ArmTimer(request.read_timeout);
}

// A pooled connection the server closed while we were sending: nothing of an answer came, so
// the server never saw the request; an idempotent one is sent again on a new connection.
bool Call::CanRetryStale() const {
  if (stale_retry_used_ || received_any_ || conn == nullptr || conn->requests < 2) return false;
  for (std::string_view m : {"GET", "HEAD", "OPTIONS", "PUT", "DELETE"}) {
    if (request.method == m) return true;
  }
  return false;
}

void Call::RetryFresh() {
  stale_retry_used_ = true;
  DetachConn(/*close=*/true);
  client->Start(this, /*fresh=*/true);
}

void Call::DetachConn(bool close) {
  if (conn == nullptr) return;
  Conn* c = conn;
  conn = nullptr;
  c->call = nullptr;
  if (close) c->tcp.Close();
}

void Call::Process() {
  received_any_ = true;
  while (conn != nullptr) {
    if (!head_done_) {
      if (!ProcessHead()) return;
      continue;
    }
    std::string_view data = conn->pending();
    if (data.empty()) return;
    spans_.clear();
    http::BodyChunk r = parser_.FeedBody(data.data(), data.size(), &spans_);
    if (r.error) {
      Fail(Error::kMalformedResponse);
      return;
    }
    conn->Consume(r.consumed);  // the spans stay valid: the buffer changes only at a read
    for (std::string_view piece : spans_) {
      if (cb.on_body) {
        if (!Notify([&] { cb.on_body(piece); })) return;
      } else if (result_.response.body.size() + piece.size() > request.max_body_size) {
        Fail(Error::kTooLarge);
        return;
      } else {
        result_.response.body.append(piece);
      }
    }
    if (r.complete) Complete();
    return;
  }
}

bool Call::ProcessHead() {
  std::string_view data = conn->pending();
  size_t len = http::FindHeadEnd(data, &scan_pos_);
  if (len == 0) {
    if (conn->buffer_full()) Fail(Error::kTooLarge);
    return false;
  }
  if (!parser_.ParseHead(data.data(), len, &head_)) {
    Fail(Error::kMalformedResponse);
    return false;
  }
  conn->Consume(len);
  scan_pos_ = 0;
  if (head_.status < 200) {
    if (head_.status == 101) {  // no upgrade was asked for
      Fail(Error::kMalformedResponse);
      return false;
    }
    parser_.Reset(request.method == "HEAD");  // an interim answer: the real one follows
    return true;
  }
  head_done_ = true;
  Response& r = result_.response;
  r.status = head_.status;
  r.headers.reserve(head_.headers.size());
  for (const http::Header& h : head_.headers) r.headers.emplace_back(h.name, h.value);
  if (!cb.on_body && head_.framing == http::Framing::kContentLength &&
      head_.content_length > request.max_body_size) {
    Fail(Error::kTooLarge);
    return false;
  }
  if (cb.on_head && !Notify([&] { cb.on_head(r); })) return false;
  if (parser_.message_complete()) {
    Complete();
    return false;
  }
  return true;
}

void Call::OnEof(int status) {
  if (head_done_ && status == UV_EOF && parser_.FinishAtEof()) {
    Complete();  // a close-delimited body
    return;
  }
  if (CanRetryStale()) {
    RetryFresh();
    return;
  }
  Fail(Error::kConnectionClosed, status);
}

void Call::Complete() {
  Conn* c = conn;
  bool reusable = request.keep_alive && head_.keep_alive &&
                  head_.framing != http::Framing::kUntilClose && !c->tcp.writing() &&
                  !c->tcp.read_ended() && c->pending().empty() && c->client != nullptr;
  DetachConn(/*close=*/!reusable);
  if (reusable) client->PutIdle(c);
  Finish(Error::kNone, 0);
}

void Call::Fail(Error error, int uv_error) {
  if (client->in_fetch_ && conn != nullptr) {
    // Inside Fetch() (a pooled connection failed at once): the connection's close callback
    // delivers it, so no callback runs inside Fetch().
    conn->close_error = error;
    conn->close_uv_error = uv_error;
    conn->tcp.Close();
    return;
  }
  DetachConn(/*close=*/true);
  Finish(error, uv_error);
}

void Call::Finish(Error error, int uv_error) {
  DetachConn(/*close=*/true);
  result_.error = error;
  result_.uv_error = uv_error;
  if (error != Error::kNone) result_.response.body.clear();
  auto done = std::move(cb.on_done);
  Result result = std::move(result_);
  if (handle != nullptr) handle->call_ = nullptr;
  client->Forget(this);
  delete this;
  if (done) done(std::move(result));
}

void Call::Cancel() {
  if (handle != nullptr) handle->call_ = nullptr;
  handle = nullptr;
  DetachConn(/*close=*/true);
  client->Forget(this);
  delete this;
}

}  // namespace turnpike::http_client
