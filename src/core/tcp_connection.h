// TcpConnection: one TCP connection on a libuv loop (accepted or connected), with its
// handle lifetime, reading into buffers its owner lends, the synchronous-first write path and
// one lazy timer.
//
// It is the one place that knows libuv's stream rules, so that the proxy's downstream and
// upstream connections, the status server and the HTTP client do not each re-learn them:
//   - a handle's memory may be freed only after its uv_close callback: Close() closes the
//     socket and the timer, and Handler::OnClosed() says when both callbacks ran;
//   - a write is first tried on the socket (send(2)); when everything went, the completion runs
//     inside Write() (no write request, no callback, no epoll_ctl); the rest is queued with
//     uv_write. Nested synchronous completions (a completion that writes again, pipelined
//     answers) are bounded, so the stack is too. On a loop with a core::WriteBatch (the
//     workers'), a write made by an I/O callback is tried at the end of the loop turn instead,
//     with the turn's other writes (write_batch.h);
//   - the read buffer is supplied by the owner at each read (OnReadBuffer), so a connection
//     that waits holds no buffer: lend one from a core::BufferPool there and take it back in
//     OnReadBufferUnused (no bytes came) or once its bytes are consumed.
//
// Embedding. A TcpConnection is a member of its owner (no allocation of its own), neither
// copyable nor movable. The owner implements Handler, calls Init() once, then Accept() or
// Connect(), and frees itself (with the TcpConnection inside) in OnClosed() at the earliest.
// After OnClosed() the same object may be Init()ed again for a new connection.
//
// Cost. About 790 bytes on x86-64 Linux (uv_tcp_t 248, uv_write_t 192, LazyTimer 184, a
// connect/shutdown request 96). Every handler call is one virtual call; nothing here allocates, on
// any path. A warm request/response over a kept-alive connection costs one read(2) per readable
// event and one send(2) per Write() that fits in the socket buffer (several buffers of up to
// kGatherBytes in all are copied into one first; larger ones go out with sendmsg(2)).
// ArmTimer() moving a deadline later only stores a number (core::LazyTimer).
//
// Thread rules: one loop, one thread: every method and every callback runs on the thread of
// the loop given to Init().
//
// Reentrancy: what the owner may do inside each callback.
//   - OnReadBuffer: only provide the buffer. No other call on this connection.
//   - OnRead, OnReadEnd, OnWritten, OnConnect, OnTimeout, OnWriteTimeout, OnShutdown: anything
//     (Write, Start/StopReading, ArmTimer, Close, ...), except freeing the owner: that waits
//     for OnClosed. After Close() no callback other than OnClosed() follows, including for
//     reads or writes in progress, so code up the stack may simply return.
//   - OnReadBufferUnused: only take the buffer back (it may StopReading()).
//   - OnClosed: the last call. The owner may delete itself (and this object) in it.
#pragma once

#include <sys/types.h>
#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/lazy_timer.h"
#include "core/write_batch.h"

namespace turnpike::core {

// An address as text: "127.0.0.1" / "::1", port "8080" and as a number.
struct AddressText {
  char ip[46] = {};  // INET6_ADDRSTRLEN
  char port[6] = {};
  uint16_t port_number = 0;
};

// uv_buf_init, inline (libuv's is a call into the shared library, made several times per
// request).
inline uv_buf_t IoBuf(char* base, size_t len) {
  uv_buf_t b;
  b.base = base;
  b.len = len;
  return b;
}
inline uv_buf_t IoBuf(std::string_view s) { return IoBuf(const_cast<char*>(s.data()), s.size()); }

// Fills `out` from an AF_INET or AF_INET6 address. Returns false for any other family.
bool FormatAddress(const sockaddr* addr, AddressText* out);

class TcpConnection {
 public:
  // How the connection reports to its owner. Callbacks with a body here are optional.
  class Handler {
   public:
    // Connect()'s result: 0, or a libuv error (UV_ECONNREFUSED, UV_ETIMEDOUT for the connect
    // timeout, ...). After an error the connection can only be closed.
    virtual void OnConnect(int /*status*/) {}

    // A read is about to happen: set `buf` to where the bytes go. A zero-length buffer stops
    // reading (reading() turns false; StartReading() again once there is room), which is how
    // back-pressure works. `suggested` is libuv's hint (64 KB), free to ignore.
    virtual void OnReadBuffer(size_t suggested, uv_buf_t* buf) = 0;
    // `len` > 0 bytes arrived at `data`, the start of the free part of the last buffer given.
    virtual void OnRead(char* data, size_t len) = 0;
    // The buffer from the last OnReadBuffer got no bytes (nothing to read after all, or the
    // read ended): the owner may take a lent buffer back. Called before OnReadEnd.
    virtual void OnReadBufferUnused(const uv_buf_t& /*buf*/) {}
    // The peer closed its side (UV_EOF) or the connection failed (UV_ECONNRESET, ...).
    // Reported once; reading is over (StartReading() does nothing any more), writing may still
    // work after UV_EOF (a half-closed peer).
    virtual void OnReadEnd(int status) = 0;

    // The Write() in progress finished: 0 when every byte went to the kernel, else a libuv
    // error. Runs inside Write() when the write completed synchronously.
    virtual void OnWritten(int status) = 0;
    // A queued write made no progress for the write timeout (set_write_timeout). The write is
    // still in progress; the owner usually closes.
    virtual void OnWriteTimeout() {}
    // Shutdown()'s result: 0 once the write side is shut down, else a libuv error.
    virtual void OnShutdown(int /*status*/) {}

    // The timer (ArmTimer) expired.
    virtual void OnTimeout() {}

    // Both handles are closed: the memory of this connection (and of the owner) may be freed.
    virtual void OnClosed() = 0;

   protected:
    ~Handler() = default;
  };

  // Synchronous write completions nested deeper than this are queued instead (completing on
  // a later loop iteration), which bounds the stack of an owner that writes on completion.
  static constexpr int kMaxSyncDepth = 8;

  TcpConnection() = default;
  // REQUIRES: never Init()ed, or OnClosed() ran.
  ~TcpConnection();
  TcpConnection(const TcpConnection&) = delete;
  TcpConnection& operator=(const TcpConnection&) = delete;

  // Prepares the handles on `loop`. `handler` receives every callback and must outlive the
  // connection until OnClosed(). From here on the connection must be Close()d.
  void Init(uv_loop_t* loop, Handler* handler);

  // Accepts a pending connection of `server` (a listening uv_tcp_t, in its connection
  // callback). Returns 0 or a libuv error (then Close()). TCP_NODELAY is set.
  int Accept(uv_stream_t* server);
  // Starts connecting to `addr` (copied; IPv4 or IPv6). The result arrives in OnConnect(),
  // never inside this call: UV_ETIMEDOUT when not connected within `timeout_seconds` (<= 0:
  // no timeout). Returns a libuv error when the attempt could not even start (then Close(), no
  // OnConnect follows). TCP_NODELAY is set.
  int Connect(const sockaddr* addr, double timeout_seconds);

  // Closes the socket and the timer; OnClosed() follows once libuv has let go of both.
  // Idempotent. A write in progress is abandoned: once Close() returns, nothing reads its
  // buffers any more and OnWritten() does not come.
  void Close();

  // ---- reading ----
  // Starts or stops reading. Both are no-ops when already in that state, after the read
  // ended (OnReadEnd) or after Close().
  void StartReading();
  void StopReading();

  // ---- writing ----
  // Writes `count` buffers. REQUIRES: connected (accepted, or OnConnect(0) came), no write in
  // progress (!writing()). After Close() it does nothing (no OnWritten). The result comes in
  // OnWritten(), inside this call when the kernel took everything at once, so the caller must not
  // rely on any state after Write() returns; or, on a loop with a WriteBatch, from the end of the
  // loop turn. The array `bufs` may be modified; the bytes it points to must stay valid and
  // unchanged until OnWritten() or Close().
  void Write(uv_buf_t* bufs, unsigned count);
  // A queued write that makes no progress for `seconds` reports OnWriteTimeout() (nginx's
  // send_timeout: the time between two successive write operations). 0 = none (the default).
  void set_write_timeout(double seconds) { write_timeout_ms_ = ToMs(seconds); }
  // Shuts the write side down after the write in progress (the peer reads EOF); result in
  // OnShutdown(). REQUIRES: connected; at most once per connection. No-op after Close().
  void Shutdown();

  // ---- the timer ----
  // One deadline for the owner (idle, read, linger timeouts): OnTimeout() `seconds` from now,
  // replacing the previous deadline. Moving it later costs a store.
  void ArmTimer(double seconds) {
    if (closing_) return;
    uint64_t ms = ToMs(seconds);
    timer_deadline_ = uv_now(tcp_.loop) + (ms == 0 ? 1 : ms);
    if (io_deadline_ == 0) {
      timer_.ArmAt(timer_deadline_);  // the common case, inline: a request re-arms often
    } else {
      Rearm();
    }
  }
  void DisarmTimer() {
    timer_deadline_ = 0;
    if (io_deadline_ == 0) {
      timer_.Disarm();
    } else {
      Rearm();
    }
  }
  bool timer_armed() const { return timer_deadline_ != 0; }

  // ---- state ----
  bool connected() const { return connected_; }
  bool connecting() const { return connecting_; }
  bool reading() const { return reading_; }
  bool read_ended() const { return read_ended_; }
  bool writing() const { return writing_; }
  bool closing() const { return closing_; }
  // Bytes of the write in progress that the kernel has not taken yet.
  size_t write_queue_size() const { return tcp_.write_queue_size; }
  uv_loop_t* loop() const { return tcp_.loop; }

  // ---- addresses and socket options (0 / true on success, else a libuv error / false) ----
  bool PeerAddress(AddressText* out) const;
  bool LocalAddress(AddressText* out) const;
  int PeerSockaddr(sockaddr_storage* out) const;
  int LocalSockaddr(sockaddr_storage* out) const;
  int SetSendBufferSize(int bytes);
  int SetReceiveBufferSize(int bytes);
  // TCP keep-alive probes after `delay_seconds` of silence (long watch streams).
  int SetKeepAlive(bool enable, unsigned delay_seconds);

 private:
  static uint64_t ToMs(double seconds) {
    return seconds <= 0 ? 0 : seconds < 0.001 ? 1 : static_cast<uint64_t>(seconds * 1000);
  }
  uv_stream_t* stream() { return reinterpret_cast<uv_stream_t*>(&tcp_); }
  void Rearm();  // the lazy timer at the earliest of timer_deadline_ and io_deadline_
  void WriteNow(uv_buf_t* bufs, unsigned count);
  void WriteDone(int status);
  void StartShutdown();
  friend class WriteBatch;
  // WriteBatch's flush: the write Write() deferred, unless Close() abandoned it.
  void SendDeferred(uv_buf_t* bufs, unsigned count);
  void CacheFd();  // fd_ from the handle, once it has a socket
  ssize_t TrySend(const uv_buf_t* bufs, unsigned count);
  static constexpr size_t kGatherBytes = 2048;  // TrySend: buffers up to this go out as one

  static void OnAlloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf);
  static void OnReadCb(uv_stream_t* s, ssize_t nread, const uv_buf_t* buf);
  static void OnConnectCb(uv_connect_t* req, int status);
  static void OnWriteCb(uv_write_t* req, int status);
  static void OnShutdownCb(uv_shutdown_t* req, int status);
  static void OnTimerCb(void* self);
  static void OnCloseCb(uv_handle_t* h);

  uv_tcp_t tcp_{};
  LazyTimer timer_;
  uv_write_t write_req_{};
  // A connect ends (or the connection is closed) before any shutdown can start.
  union {
    uv_connect_t connect;
    uv_shutdown_t shutdown;
  } req_{};
  Handler* handler_ = nullptr;
  WriteBatch* batch_ = nullptr;  // the loop's, if it batches writes (WriteBatch::ForLoop)
  uint64_t timer_deadline_ = 0;  // loop ms of the owner's OnTimeout; 0 = none
  uint64_t io_deadline_ = 0;     // loop ms of the connect or write timeout; 0 = none
  uint64_t write_timeout_ms_ = 0;
  size_t write_queue_at_arm_ = 0;  // write_queue_size when io_deadline_ was set (progress)
  int fd_ = -1;                    // the socket, for TrySend (-1: ask libuv)
  int8_t pending_closes_ = 0;      // handles still to close (2 after Init)
  int8_t sync_depth_ = 0;
  bool connecting_ = false;
  bool connected_ = false;
  bool reading_ = false;
  bool read_ended_ = false;
  bool writing_ = false;
  bool closing_ = false;
  bool shutdown_started_ = false;
  bool deferred_ = false;           // the write in progress waits in batch_
  bool shutdown_after_flush_ = false;  // Shutdown() came while it waited
};

}  // namespace turnpike::core
