// UpstreamConnection: one TCP connection from a worker to an upstream node, and the worker's
// unit of keep-alive pooling.
//
// While it serves a request it reports to that request's UpstreamConnection::Owner (the
// callbacks interface below), so any request-level client on a worker loop can use it, not
// only the proxy's downstream connection. Between requests it sits in the worker's keep-alive
// pool, where any byte or EOF from the node, or the pool's idle timeout, closes it. The
// socket, the write path (synchronous try-write, queued remainder) and the timer are a
// core::TcpConnection; this class adds the read buffer, lent by the worker while a request is
// served (an idle pooled connection holds none), and the pool bookkeeping.
//
// Owned by the worker loop; freed only once its handles are closed (TcpConnection's
// OnClosed). Worker thread only.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/tcp_connection.h"
#include "proxy/worker.h"

namespace turnpike::proxy {

class UpstreamConnection final : public PoolHook, core::TcpConnection::Handler {
 public:
  static constexpr size_t kBufferSize = Worker::kUpstreamBufferSize;

  // What the connection reports to the request it serves (attached). No call comes while it
  // is pooled or after Close(). Every callback may Close() the connection, Write(), start or
  // stop reading, or Detach() it.
  class Owner {
   public:
    // The connect finished: 0, or a libuv error (UV_ETIMEDOUT: the connect timeout).
    virtual void OnUpstreamConnected(int status) = 0;
    // Bytes were appended to pending().
    virtual void OnUpstreamData() = 0;
    // The node closed its side (UV_EOF) or the connection failed; reading is over.
    virtual void OnUpstreamEof(int status) = 0;
    // The Write() in progress finished (0, or a libuv error); may run inside Write().
    virtual void OnUpstreamWritten(int status) = 0;
    // The timer (ArmTimer) expired.
    virtual void OnUpstreamTimeout() = 0;

   protected:
    ~Owner() = default;
  };

  // Starts connecting to `addr` (`len` bytes, IPv4 or IPv6; copied); the result arrives in
  // owner->OnUpstreamConnected, never inside this call. nullptr when the connect could not
  // even start. The connection's pool key is PoolAddr::Of(addr, len).
  static UpstreamConnection* Connect(Worker* worker, const sockaddr* addr, socklen_t len,
                                     Owner* owner, double connect_timeout);

  void Attach(Owner* owner);      // taken from the pool, or handed over (proxy/tunnel.h)
  void Detach();                  // back to the pool (caller then calls PutIdle)
  void Close() { tcp_.Close(); }  // idempotent; no owner callback follows

  // Writes `bufs` (must stay valid until owner->OnUpstreamWritten). Tried synchronously
  // first; then OnUpstreamWritten runs inside this call, so the caller must not touch the
  // exchange after Write() returns. `bufs` may be modified.
  void Write(uv_buf_t* bufs, unsigned count) { tcp_.Write(bufs, count); }
  void StartReading() { tcp_.StartReading(); }
  void StopReading() { tcp_.StopReading(); }
  // owner->OnUpstreamTimeout (or, pooled, the close) `seconds` from now.
  void ArmTimer(double seconds) { tcp_.ArmTimer(seconds); }
  void StopTimer() { tcp_.DisarmTimer(); }

  // Unconsumed response bytes [begin, end) of the read buffer.
  std::string_view pending() const { return std::string_view(buf_ + begin_, end_ - begin_); }
  void Consume(size_t n) { begin_ += n; }

  // Served a request before the current one (so it came from the keep-alive pool).
  bool reused() const { return requests_ > 1; }
  uint32_t requests() const { return requests_; }
  void CountRequest() { ++requests_; }
  bool closing() const { return tcp_.closing(); }
  bool writing() const { return tcp_.writing(); }
  bool connected() const { return tcp_.connected(); }
  // Some byte arrived from the node for the current request (since Connect or Attach).
  bool received_any() const { return received_any_; }

  bool buffer_full() const { return end_ == kBufferSize && begin_ == 0; }

  // While a client write refers to bytes of the read buffer, reading may go on but must not
  // move or reuse them.
  void set_pinned(bool pinned) { pinned_ = pinned; }

 private:
  explicit UpstreamConnection(Worker* worker);
  ~UpstreamConnection();
  void ReturnBuffer();

  // core::TcpConnection::Handler
  void OnConnect(int status) override;
  void OnReadBuffer(size_t suggested, uv_buf_t* buf) override;
  void OnRead(char* data, size_t len) override;
  void OnReadEnd(int status) override;
  void OnWritten(int status) override;
  void OnTimeout() override;
  void OnClosed() override;

  core::TcpConnection tcp_;
  Worker* worker_;
  Owner* owner_ = nullptr;  // null while pooled or closing
  char* buf_ = nullptr;
  size_t begin_ = 0;
  size_t end_ = 0;
  uint32_t requests_ = 0;
  bool pinned_ = false;
  bool received_any_ = false;
};

}  // namespace turnpike::proxy
