// UpstreamConnection: one TCP connection from a worker to an upstream node.
//
// Owned by the worker loop. While serving a request it belongs to exactly one
// ClientConnection (owner()); between requests it sits in the worker's keep-alive pool, where
// any byte or EOF from the node closes it. Its read buffer is lent by the worker while it
// serves a request (an idle pooled connection holds none). Freed only in its uv_close
// callback.
#pragma once

#include <uv.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/lazy_timer.h"
#include "proxy/worker.h"

namespace turnpike::proxy {

class ClientConnection;

class UpstreamConnection {
 public:
  static constexpr size_t kBufferSize = Worker::kUpstreamBufferSize;

  // Starts connecting to `key`'s address; the result arrives in owner->OnUpstreamConnected.
  static UpstreamConnection* Connect(Worker* worker, const PoolKey& key, ClientConnection* owner,
                                     double connect_timeout);

  void Attach(ClientConnection* owner);  // taken from the pool
  void Detach();                         // back to the pool (caller then calls PutIdle)
  void Close();                          // idempotent

  // Writes `bufs` (must stay valid until owner->OnUpstreamWritten). Tried synchronously
  // first; then OnUpstreamWritten runs inside this call, so the caller must not touch the
  // exchange after Write() returns. `bufs` may be modified.
  void Write(uv_buf_t* bufs, unsigned count);
  void StartReading();
  void StopReading();
  void ArmTimer(double seconds);  // fires owner->OnUpstreamTimeout (or closes when idle)
  void StopTimer();

  // Unconsumed response bytes [begin, end) of the read buffer.
  std::string_view pending() const { return std::string_view(buf_ + begin_, end_ - begin_); }
  void Consume(size_t n);

  ClientConnection* owner() const { return owner_; }
  const PoolKey& key() const { return key_; }
  // Served a request before the current one (so it came from the keep-alive pool).
  bool reused() const { return requests_ > 1; }
  uint32_t requests() const { return requests_; }
  void CountRequest() { ++requests_; }
  bool closing() const { return closing_; }
  bool writing() const { return writing_; }
  bool connected() const { return connected_; }
  // Some byte arrived from the node for the current request (since Connect or Attach).
  bool received_any() const { return received_any_; }

  bool buffer_full() const { return end_ == kBufferSize && begin_ == 0; }

  // While a client write refers to bytes of the read buffer, reading may go on but must not
  // move or reuse them.
  void set_pinned(bool pinned) { pinned_ = pinned; }

  size_t pool_index = 0;  // position in the worker's idle list (worker use only)

 private:
  UpstreamConnection(Worker* worker, const PoolKey& key);
  ~UpstreamConnection();
  static void OnConnect(uv_connect_t* req, int status);
  static void OnAlloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf);
  static void OnRead(uv_stream_t* s, ssize_t nread, const uv_buf_t* buf);
  static void OnWrite(uv_write_t* req, int status);
  static void OnTimeout(void* self);
  static void OnClose(uv_handle_t* h);

  uv_tcp_t tcp_{};
  core::LazyTimer timer_;
  uv_connect_t connect_req_{};
  uv_write_t write_req_{};
  Worker* worker_;
  PoolKey key_;
  ClientConnection* owner_ = nullptr;
  char* buf_;
  size_t begin_ = 0;
  size_t end_ = 0;
  uint32_t requests_ = 0;
  int pending_closes_ = 0;
  int sync_depth_ = 0;
  bool closing_ = false;
  bool writing_ = false;
  bool reading_ = false;
  bool connected_ = false;
  bool pinned_ = false;
  bool received_any_ = false;
};

}  // namespace turnpike::proxy
