#include "proxy/upstream_connection.h"

#include <cstring>

namespace turnpike::proxy {

UpstreamConnection::UpstreamConnection(Worker* worker) : worker_(worker) {}

UpstreamConnection::~UpstreamConnection() { ReturnBuffer(); }

void UpstreamConnection::ReturnBuffer() {
  if (buf_ == nullptr) return;
  worker_->upstream_buffers().Return(buf_);
  buf_ = nullptr;
  begin_ = end_ = 0;
}

UpstreamConnection* UpstreamConnection::Connect(Worker* worker, const sockaddr* addr, socklen_t len,
                                                Owner* owner, double connect_timeout) {
  auto* u = new UpstreamConnection(worker);
  u->pool_addr = PoolAddr::Of(addr, len);
  u->tcp_.Init(worker->loop(), u);
  u->owner_ = owner;
  worker->mutable_stats().upstream_connects.fetch_add(1, std::memory_order_relaxed);
  worker->OnUpstreamOpened();
  if (u->tcp_.Connect(addr, connect_timeout) != 0) {
    u->owner_ = nullptr;
    u->tcp_.Close();  // OnClosed frees it
    return nullptr;
  }
  return u;
}

void UpstreamConnection::Attach(Owner* owner) {
  owner_ = owner;
  received_any_ = false;
  StopTimer();
}

void UpstreamConnection::Detach() {
  owner_ = nullptr;
  pinned_ = false;
  // Idle in the pool it only waits for the node to close: the buffer goes back.
  ReturnBuffer();
}

void UpstreamConnection::OnClosed() {
  worker_->OnUpstreamClosed(this);
  delete this;
}

void UpstreamConnection::OnConnect(int status) {
  if (owner_ != nullptr) owner_->OnUpstreamConnected(status);
}

void UpstreamConnection::OnWritten(int status) {
  if (owner_ != nullptr) owner_->OnUpstreamWritten(status);
}

void UpstreamConnection::OnReadBuffer(size_t, uv_buf_t* buf) {
  if (buf_ == nullptr) {
    buf_ = worker_->upstream_buffers().Take();
    begin_ = end_ = 0;
  }
  // Unconsumed bytes may move to the front unless a client write refers to them.
  if (pinned_) {
    // append only
  } else if (begin_ == end_) {
    begin_ = end_ = 0;
  } else if (end_ == kBufferSize && begin_ > 0) {
    std::memmove(buf_, buf_ + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  // A full buffer gives a zero-length one: reading stops until the owner made room.
  *buf = core::IoBuf(buf_ + end_, kBufferSize - end_);
}

void UpstreamConnection::OnRead(char*, size_t len) {
  if (owner_ == nullptr) {
    // Idle in the pool: the node sent something unasked (or garbage). Either way it is done.
    worker_->RemoveIdle(this);
    Close();
    return;
  }
  end_ += len;
  received_any_ = true;
  owner_->OnUpstreamData();
}

void UpstreamConnection::OnReadEnd(int status) {
  if (owner_ == nullptr) {  // idle in the pool: the node closed it
    worker_->RemoveIdle(this);
    Close();
    return;
  }
  owner_->OnUpstreamEof(status);
}

void UpstreamConnection::OnTimeout() {
  if (owner_ == nullptr) {  // pool idle timeout
    worker_->RemoveIdle(this);
    Close();
    return;
  }
  owner_->OnUpstreamTimeout();
}

}  // namespace turnpike::proxy
