#include "proxy/upstream_connection.h"

#include <cstring>

#include "proxy/client_connection.h"

namespace turnpike::proxy {

UpstreamConnection::UpstreamConnection(Worker* worker, const PoolKey& key)
    : worker_(worker), key_(key), buf_(nullptr) {}

UpstreamConnection::~UpstreamConnection() {
  if (buf_ != nullptr) worker_->upstream_buffers().Return(buf_);
}

UpstreamConnection* UpstreamConnection::Connect(Worker* worker, const PoolKey& key,
                                                ClientConnection* owner,
                                                double connect_timeout) {
  auto* u = new UpstreamConnection(worker, key);
  uv_tcp_init(worker->loop(), &u->tcp_);
  u->timer_.Init(worker->loop(), u, &OnTimeout);
  u->tcp_.data = u;
  u->pending_closes_ = 2;
  u->owner_ = owner;
  worker->mutable_stats().upstream_connects.fetch_add(1, std::memory_order_relaxed);
  worker->OnUpstreamOpened();
  int rc = uv_tcp_connect(&u->connect_req_, &u->tcp_,
                          reinterpret_cast<const sockaddr*>(&u->key_.addr), &OnConnect);
  if (rc != 0) {
    u->Close();
    return nullptr;
  }
  uv_tcp_nodelay(&u->tcp_, 1);
  u->ArmTimer(connect_timeout);
  return u;
}

void UpstreamConnection::Attach(ClientConnection* owner) {
  owner_ = owner;
  received_any_ = false;
  StopTimer();
}

void UpstreamConnection::Detach() {
  owner_ = nullptr;
  pinned_ = false;
  begin_ = end_ = 0;
  // Idle in the pool it only waits for the node to close: the buffer goes back.
  if (buf_ != nullptr) {
    worker_->upstream_buffers().Return(buf_);
    buf_ = nullptr;
  }
}

void UpstreamConnection::Close() {
  if (closing_) return;
  closing_ = true;
  owner_ = nullptr;
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), &OnClose);
  timer_.Close(&OnClose);
}

void UpstreamConnection::OnClose(uv_handle_t* h) {
  auto* u = static_cast<UpstreamConnection*>(h->data);
  if (--u->pending_closes_ == 0) {
    u->worker_->OnUpstreamClosed(u);
    delete u;
  }
}

void UpstreamConnection::OnConnect(uv_connect_t* req, int status) {
  auto* u = static_cast<UpstreamConnection*>(req->handle->data);
  if (u->closing_ || u->owner_ == nullptr) return;
  u->StopTimer();
  if (status == 0) u->connected_ = true;
  u->owner_->OnUpstreamConnected(status);
}

void UpstreamConnection::Write(uv_buf_t* bufs, unsigned count) {
  constexpr int kMaxSyncDepth = 8;
  writing_ = true;
  if (sync_depth_ < kMaxSyncDepth) {
    int n = uv_try_write(reinterpret_cast<uv_stream_t*>(&tcp_), bufs, count);
    if (n < 0 && n != UV_EAGAIN) {
      writing_ = false;
      if (owner_ != nullptr) owner_->OnUpstreamWritten(n);
      return;
    }
    size_t written = n > 0 ? static_cast<size_t>(n) : 0;
    while (count > 0 && written >= bufs->len) {
      written -= bufs->len;
      ++bufs;
      --count;
    }
    if (count == 0) {
      writing_ = false;
      ++sync_depth_;
      if (owner_ != nullptr) owner_->OnUpstreamWritten(0);
      --sync_depth_;
      return;
    }
    bufs->base += written;
    bufs->len -= written;
  }
  int rc = uv_write(&write_req_, reinterpret_cast<uv_stream_t*>(&tcp_), bufs, count, &OnWrite);
  if (rc != 0) {
    writing_ = false;
    if (owner_ != nullptr) owner_->OnUpstreamWritten(rc);
  }
}

void UpstreamConnection::OnWrite(uv_write_t* req, int status) {
  auto* u = static_cast<UpstreamConnection*>(req->handle->data);
  u->writing_ = false;
  if (u->closing_ || u->owner_ == nullptr) return;
  u->owner_->OnUpstreamWritten(status);
}

void UpstreamConnection::StartReading() {
  if (reading_ || closing_) return;
  reading_ = true;
  uv_read_start(reinterpret_cast<uv_stream_t*>(&tcp_), &OnAlloc, &OnRead);
}

void UpstreamConnection::StopReading() {
  if (!reading_) return;
  reading_ = false;
  uv_read_stop(reinterpret_cast<uv_stream_t*>(&tcp_));
}

void UpstreamConnection::ArmTimer(double seconds) {
  timer_.Arm(seconds);
}

void UpstreamConnection::StopTimer() { timer_.Disarm(); }

void UpstreamConnection::Consume(size_t n) {
  begin_ += n;
}

void UpstreamConnection::OnAlloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
  auto* u = static_cast<UpstreamConnection*>(h->data);
  if (u->buf_ == nullptr) {
    u->buf_ = u->worker_->upstream_buffers().Take();
    u->begin_ = u->end_ = 0;
  }
  // Unconsumed bytes may move to the front unless a client write refers to them.
  if (u->pinned_) {
    // append only
  } else if (u->begin_ == u->end_) {
    u->begin_ = u->end_ = 0;
  } else if (u->end_ == kBufferSize && u->begin_ > 0) {
    std::memmove(u->buf_, u->buf_ + u->begin_, u->end_ - u->begin_);
    u->end_ -= u->begin_;
    u->begin_ = 0;
  }
  buf->base = u->buf_ + u->end_;
  buf->len = kBufferSize - u->end_;
}

void UpstreamConnection::OnRead(uv_stream_t* s, ssize_t nread, const uv_buf_t*) {
  auto* u = static_cast<UpstreamConnection*>(s->data);
  if (u->closing_ || nread == 0) return;
  if (u->owner_ == nullptr) {
    // Idle in the pool: the node closed it (or sent garbage). Either way it is done.
    u->worker_->RemoveIdle(u);
    u->Close();
    return;
  }
  if (nread > 0) {
    u->end_ += static_cast<size_t>(nread);
    u->received_any_ = true;
    u->owner_->OnUpstreamData();
    return;
  }
  if (nread == UV_ENOBUFS) {
    u->StopReading();
    return;
  }
  u->StopReading();
  u->owner_->OnUpstreamEof(static_cast<int>(nread));
}

void UpstreamConnection::OnTimeout(void* self) {
  auto* u = static_cast<UpstreamConnection*>(self);
  if (u->closing_) return;
  if (u->owner_ == nullptr) {  // pool idle timeout
    u->worker_->RemoveIdle(u);
    u->Close();
    return;
  }
  u->owner_->OnUpstreamTimeout();
}

}  // namespace turnpike::proxy
