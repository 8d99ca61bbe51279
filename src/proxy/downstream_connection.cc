#include "proxy/downstream_connection.h"

#include <cstring>
#include <utility>

#include "proxy/exchange.h"

namespace turnpike::proxy {
namespace {

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
constexpr double kLingerSeconds = 2;
// While the worker drains, a finished response still gets a short linger (a late byte from
// the client could otherwise turn into a RST that destroys it), but a graceful stop does not
// wait out the full one.
constexpr double kDrainLingerSeconds = 0.2;

}  // namespace

DownstreamConnection::DownstreamConnection(Worker* worker) : worker_(worker) {}

DownstreamConnection::~DownstreamConnection() {
  if (x_ != nullptr) {
    x_->Release();
    if (!worker_->ReturnExchange(x_)) delete x_;  // closed for good: nothing refers to it
  }
  FreeBuffer();
}

DownstreamConnection* DownstreamConnection::Accept(Worker* worker, uv_stream_t* server) {
  auto* c = new DownstreamConnection(worker);
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

// ---------------------------------------------------------------- what a request borrows

void DownstreamConnection::AcquireExchange() {
  if (x_ != nullptr) return;
  x_ = worker_->TakeExchange();
  x_->Attach(this);
}

// Between requests (the exchange has released what it held).
void DownstreamConnection::ReleaseExchange() {
  if (x_ != nullptr && worker_->ReturnExchange(x_)) x_ = nullptr;
}

void DownstreamConnection::FreeBuffer() {
  if (buf_ == nullptr) return;
  if (cap_ == Worker::kClientBufferSize) {
    worker_->client_buffers().Return(buf_);
  } else {
    delete[] buf_;  // grown for a large head
  }
  buf_ = nullptr;
  cap_ = begin_ = end_ = scan_pos_ = 0;
}

// An idle connection holds no read buffer: it takes one at its next read (OnReadBuffer).
// Between requests nothing refers to the buffer (a kept exchange's old views are never read
// again).
void DownstreamConnection::ReleaseBufferIfIdle() {
  if (begin_ == end_ && state_ == State::kReadingHead) FreeBuffer();
}

// ---------------------------------------------------------------- lifetime

void DownstreamConnection::Close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  if (x_ != nullptr) x_->Abort();
  conn_.Close();
  worker_->OnClientClosed(this);
}

void DownstreamConnection::OnClosed() { delete this; }

void DownstreamConnection::Drain() {
  switch (state_) {
    case State::kReadingHead:
      Close();  // between requests (or mid-head): nothing in flight
      break;
    case State::kLingering:
      ArmTimer(kDrainLingerSeconds);  // the response is out: shorten the linger
      break;
    case State::kExchange:
      keep_alive_ = false;  // answer the current request, then close
      break;
    case State::kClosed:
      break;
  }
}

void DownstreamConnection::LingerAndClose() {
  // Half-close and discard what the client still sends, so the response is not destroyed by
  // a RST for unread data (nginx's lingering close).
  state_ = State::kLingering;
  begin_ = end_ = 0;
  conn_.Shutdown();  // a failure closes (OnShutdown), possibly inside this call
  if (state_ == State::kClosed) return;
  StartReading();
  ArmTimer(worker_->draining() ? kDrainLingerSeconds : kLingerSeconds);
}

void DownstreamConnection::OnShutdown(int status) {
  if (status < 0 && state_ != State::kClosed) Close();
}

// Idle keep-alive, slow head, slow body or linger end: all close.
void DownstreamConnection::OnTimeout() { Close(); }

// ---------------------------------------------------------------- reading

void DownstreamConnection::OnReadBuffer(size_t, uv_buf_t* buf) {
  if (buf_ == nullptr) {
    buf_ = worker_->client_buffers().Take();
    cap_ = Worker::kClientBufferSize;
    begin_ = end_ = scan_pos_ = 0;
  }
  // Buffered bytes never move while something refers to them: the request head's views
  // during an exchange, body bytes an upstream write is sending.
  if (state_ == State::kLingering) {
    begin_ = end_ = 0;  // what arrives now is discarded
  } else if (begin_ == end_) {
    if (state_ == State::kReadingHead) {
      begin_ = end_ = 0;
    } else if (state_ == State::kExchange && x_->input_movable()) {
      begin_ = end_ = head_end_;
    }
  }
  // A full buffer gives a zero-length one: reading stops until the consumer made room.
  *buf = core::IoBuf(buf_ + end_, cap_ - end_);
}

void DownstreamConnection::OnRead(char*, size_t len) {
  end_ += len;
  switch (state_) {
    case State::kReadingHead:
      ProcessHead();
      break;
    case State::kExchange:
      x_->OnData();
      break;
    case State::kLingering:
      begin_ = end_ = 0;
      break;
    case State::kClosed:
      break;
  }
}

// Nothing to read after all (EAGAIN): an idle connection gives its buffer back.
void DownstreamConnection::OnReadBufferUnused(const uv_buf_t&) { ReleaseBufferIfIdle(); }

// EOF or error: the client is gone (mid-exchange this aborts the upstream side too), unless
// the exchange is a tunnel, which flushes what the client sent before it ends.
void DownstreamConnection::OnReadEnd(int status) {
  if (state_ == State::kExchange && x_->OnClientEnd(status)) return;
  Close();
}

void DownstreamConnection::Compact() {
  if (begin_ == 0) return;
  std::memmove(buf_, buf_ + begin_, end_ - begin_);
  end_ -= begin_;
  begin_ = 0;
}

bool DownstreamConnection::Grow(size_t new_cap) {
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

void DownstreamConnection::ProcessHead() {
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
    RejectHead(line_too_long ? 414 : 431);
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
  StartExchange(head_len);
}

// No head was parsed: the exchange answers from a blank request, and nothing more is read.
void DownstreamConnection::RejectHead(int status) {
  AcquireExchange();
  state_ = State::kExchange;
  keep_alive_ = false;
  x_->Reject(status, end_ - begin_);
}

void DownstreamConnection::StartExchange(size_t head_len) {
  AcquireExchange();
  // Reading goes on (stopping and restarting costs epoll_ctl calls per request); input that
  // arrives during the exchange is either body, or stays buffered as the next request.
  conn_.DisarmTimer();
  head_deadline_set_ = false;
  const char* head = buf_ + begin_;
  begin_ += head_len;
  head_end_ = begin_;
  scan_pos_ = 0;
  state_ = State::kExchange;
  keep_alive_ = !worker_->draining();  // the exchange adds what the request says
  x_->Start(head, head_len);
}

void DownstreamConnection::EndExchange() {
  if (!keep_alive_ || worker_->draining()) {
    LingerAndClose();
    return;
  }
  NextRequest();
}

void DownstreamConnection::NextRequest() {
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

// nginx's realip module trusts real_ip_header only from peers in real_ip_from; X-Forwarded-*
// from trusted_addresses.
void DownstreamConnection::ComputePeerRules(const Snapshot& snap) {
  const AddressRules& rules = snap.addresses;
  peer_real_ip_from_ = rules.real_ip_from.Match(peer_.ip);
  peer_trusted_ = rules.has_trusted && rules.trusted.Match(peer_.ip);
  peer_rules_version_ = snap.version;
}

// ---------------------------------------------------------------- writing

// Before any response write of the request (so the connection's one write slot is free).
void DownstreamConnection::SendContinue() {
  continue_inflight_ = true;
  uv_buf_t b = core::IoBuf(kContinue);
  conn_.Write(&b, 1);  // OnWritten: usually inside this call (libuv copies the array)
}

// Most responses fit in the socket buffer, so TcpConnection first tries the write
// synchronously: a completed write then needs no write request, no callback and no epoll_ctl.
void DownstreamConnection::Write(uv_buf_t* bufs, unsigned count) {
  if (continue_inflight_) {  // rare: "100 Continue" did not go out at once
    deferred_bufs_ = bufs;
    deferred_count_ = count;
    return;
  }
  conn_.set_write_timeout(worker_->gateway().send_timeout);  // between two writes, as nginx
  conn_.Write(bufs, count);
}

void DownstreamConnection::OnWritten(int status) {
  if (state_ == State::kClosed) return;
  if (!continue_inflight_) {
    x_->OnWritten(status);
    return;
  }
  continue_inflight_ = false;
  if (status < 0) {
    Close();
  } else if (deferred_bufs_ != nullptr) {
    Write(std::exchange(deferred_bufs_, nullptr), deferred_count_);
  }
}

// send_timeout: a response write made no progress for that long.
void DownstreamConnection::OnWriteTimeout() { Close(); }

}  // namespace turnpike::proxy
