#include "core/tcp_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cassert>
#include <cerrno>
#include <charconv>
#include <cstring>

namespace turnpike::core {

bool FormatAddress(const sockaddr* addr, AddressText* out) {
  if (addr->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(addr);
    uv_ip4_name(v4, out->ip, sizeof(out->ip));
    out->port_number = ntohs(v4->sin_port);
  } else if (addr->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(addr);
    uv_ip6_name(v6, out->ip, sizeof(out->ip));
    out->port_number = ntohs(v6->sin6_port);
  } else {
    return false;
  }
  *std::to_chars(out->port, out->port + sizeof(out->port) - 1, out->port_number).ptr = '\0';
  return true;
}

TcpConnection::~TcpConnection() { assert(pending_closes_ == 0); }

void TcpConnection::Init(uv_loop_t* loop, Handler* handler) {
  assert(pending_closes_ == 0);
  handler_ = handler;
  uv_tcp_init(loop, &tcp_);
  tcp_.data = this;
  timer_.Init(loop, this, &OnTimerCb);
  pending_closes_ = 2;
  timer_deadline_ = io_deadline_ = write_timeout_ms_ = 0;
  write_queue_at_arm_ = 0;
  sync_depth_ = 0;
  connecting_ = connected_ = reading_ = read_ended_ = writing_ = closing_ = false;
  shutdown_started_ = deferred_ = shutdown_after_flush_ = false;
  fd_ = -1;
  batch_ = WriteBatch::ForLoop(loop);
}

void TcpConnection::CacheFd() {
  uv_os_fd_t fd;
  fd_ = uv_fileno(reinterpret_cast<uv_handle_t*>(&tcp_), &fd) == 0 ? fd : -1;
}

int TcpConnection::Accept(uv_stream_t* server) {
  int rc = uv_accept(server, stream());
  if (rc != 0) return rc;
  connected_ = true;
  uv_tcp_nodelay(&tcp_, 1);
  CacheFd();
  return 0;
}

int TcpConnection::Connect(const sockaddr* addr, double timeout_seconds) {
  int rc = uv_tcp_connect(&req_.connect, &tcp_, addr, &OnConnectCb);
  if (rc != 0) return rc;
  connecting_ = true;
  uv_tcp_nodelay(&tcp_, 1);
  CacheFd();
  if (uint64_t ms = ToMs(timeout_seconds); ms != 0) {
    io_deadline_ = uv_now(tcp_.loop) + ms;
    Rearm();
  }
  return 0;
}

void TcpConnection::Close() {
  if (closing_) return;
  closing_ = true;
  reading_ = false;
  connecting_ = false;
  timer_deadline_ = io_deadline_ = 0;
  deferred_ = shutdown_after_flush_ = false;  // a write waiting in the batch is abandoned
  // uv_close stops the watcher and closes the fd now: a queued write is abandoned here and
  // its callback (UV_ECANCELED) is swallowed in OnWriteCb.
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), &OnCloseCb);
  timer_.Close(&OnCloseCb);
}

void TcpConnection::OnCloseCb(uv_handle_t* h) {
  auto* c = static_cast<TcpConnection*>(h->data);
  if (--c->pending_closes_ == 0) c->handler_->OnClosed();  // may free `c`
}

void TcpConnection::OnConnectCb(uv_connect_t* req, int status) {
  auto* c = static_cast<TcpConnection*>(req->handle->data);
  if (c->closing_ || !c->connecting_) return;  // closed, or the timeout was reported already
  c->connecting_ = false;
  c->io_deadline_ = 0;
  c->Rearm();
  if (status == 0) c->connected_ = true;
  c->handler_->OnConnect(status);
}

// ---------------------------------------------------------------- reading

void TcpConnection::StartReading() {
  if (reading_ || read_ended_ || closing_) return;
  reading_ = true;
  uv_read_start(stream(), &OnAlloc, &OnReadCb);
}

void TcpConnection::StopReading() {
  if (!reading_) return;
  reading_ = false;
  uv_read_stop(stream());
}

void TcpConnection::OnAlloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf) {
  auto* c = static_cast<TcpConnection*>(h->data);
  *buf = IoBuf(nullptr, 0);
  c->handler_->OnReadBuffer(suggested, buf);
}

void TcpConnection::OnReadCb(uv_stream_t* s, ssize_t nread, const uv_buf_t* buf) {
  auto* c = static_cast<TcpConnection*>(s->data);
  if (c->closing_) return;
  if (nread > 0) {
    c->handler_->OnRead(buf->base, static_cast<size_t>(nread));
    return;
  }
  if (nread == UV_ENOBUFS) {  // the owner had no room: wait until it calls StartReading()
    c->StopReading();
    return;
  }
  if (buf->base != nullptr) c->handler_->OnReadBufferUnused(*buf);
  if (nread == 0 || c->closing_) return;  // EAGAIN: nothing after all
  c->StopReading();
  c->read_ended_ = true;
  c->handler_->OnReadEnd(static_cast<int>(nread));
}

// ---------------------------------------------------------------- writing

void TcpConnection::Write(uv_buf_t* bufs, unsigned count) {
  assert(connected_ && !writing_);
  if (closing_) return;  // nothing follows Close(), not even a failed write's report
  writing_ = true;
  if (batch_ != nullptr && batch_->collecting() && count <= WriteBatch::kMaxBuffers) {
    batch_->Defer(this, bufs, count);
    deferred_ = true;
    return;
  }
  WriteNow(bufs, count);
}

void TcpConnection::SendDeferred(uv_buf_t* bufs, unsigned count) {
  if (!deferred_) return;  // abandoned by Close() (the object lives until the closing phase)
  deferred_ = false;
  WriteNow(bufs, count);
  if (shutdown_after_flush_ && !closing_) {
    shutdown_after_flush_ = false;
    StartShutdown();
  }
}

void TcpConnection::WriteNow(uv_buf_t* bufs, unsigned count) {
  if (sync_depth_ < kMaxSyncDepth) {
    ssize_t n = TrySend(bufs, count);
    if (n < 0 && n != UV_EAGAIN) {
      WriteDone(static_cast<int>(n));
      return;
    }
    size_t written = n > 0 ? static_cast<size_t>(n) : 0;
    while (count > 0 && written >= bufs->len) {
      written -= bufs->len;
      ++bufs;
      --count;
    }
    if (count == 0) {
      WriteDone(0);
      return;
    }
    bufs->base += written;
    bufs->len -= written;
  }
  int rc = uv_write(&write_req_, stream(), bufs, count, &OnWriteCb);
  if (rc != 0) {
    WriteDone(rc);
    return;
  }
  if (write_timeout_ms_ != 0) {
    io_deadline_ = uv_now(tcp_.loop) + write_timeout_ms_;
    write_queue_at_arm_ = tcp_.write_queue_size;
    Rearm();
  }
}

namespace {

// send(2) as the system call itself. glibc's send() is a cancellation point: in a process of
// several threads it brackets the call with __pthread_enable/disable_asynccancel (~45
// instructions, twice a proxied request; callgrind). Turnpike never cancels a thread, so it
// takes the plain call (syscall(2) sets errno as send() does). nginx, one thread per process,
// skips that bracket anyway. sendmsg(2), for larger writes only, keeps libc's call (WriteTest
// counts multi-buffer sends by interposing it).
ssize_t SendNoCancel(int fd, const void* bytes, size_t len, int flags) {
  return syscall(SYS_sendto, fd, bytes, len, flags, nullptr, 0);
}

}  // namespace

// send(2) / sendmsg(2) straight on the socket, where uv_try_write would write(2) / writev(2):
// the socket calls skip the file layer (the f_pos lock, vfs_write's checks), about a tenth of
// the kernel's cost of a small write on loopback. Several buffers of kGatherBytes or less in
// all (a head and a short body, chunk framing) are copied into one and sent with send(2): the
// kernel's msghdr and iovec import cost more (~0.2 us a call on the test machines,
// docs/benchmarks.md, the floor proxies) than the copy. Only ever called with nothing queued
// (no write in progress), so the bytes cannot overtake queued ones. Returns the bytes the
// kernel took, or a libuv error (UV_EAGAIN when it took none); the caller queues the rest of
// `bufs` either way.
ssize_t TcpConnection::TrySend(const uv_buf_t* bufs, unsigned count) {
  if (fd_ < 0) return uv_try_write(stream(), bufs, count);
  static_assert(sizeof(uv_buf_t) == sizeof(iovec) &&
                    offsetof(uv_buf_t, base) == offsetof(iovec, iov_base) &&
                    offsetof(uv_buf_t, len) == offsetof(iovec, iov_len),
                "libuv's uv_buf_t is an iovec on Unix");
  size_t total = 0;
  if (count > 1) {
    for (unsigned i = 0; i < count; ++i) total += bufs[i].len;
  }
  char gathered[kGatherBytes];
  const bool gather = count > 1 && total <= kGatherBytes;
  if (gather) {
    char* p = gathered;
    for (unsigned i = 0; i < count; ++i) {
      std::memcpy(p, bufs[i].base, bufs[i].len);
      p += bufs[i].len;
    }
  }
  ssize_t n;
  do {
    if (count == 1) {
      n = SendNoCancel(fd_, bufs[0].base, bufs[0].len, MSG_NOSIGNAL | MSG_DONTWAIT);
    } else if (gather) {
      n = SendNoCancel(fd_, gathered, total, MSG_NOSIGNAL | MSG_DONTWAIT);
    } else {
      msghdr msg{};
      msg.msg_iov = reinterpret_cast<iovec*>(const_cast<uv_buf_t*>(bufs));
      msg.msg_iovlen = count;
      n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
  } while (n < 0 && errno == EINTR);
  if (n >= 0) return n;
  return errno == EAGAIN || errno == EWOULDBLOCK ? UV_EAGAIN : -errno;  // UV__ERR on Unix
}

// A completion inside Write(): counted, so that a chain of them cannot grow the stack.
void TcpConnection::WriteDone(int status) {
  writing_ = false;
  ++sync_depth_;
  handler_->OnWritten(status);
  --sync_depth_;
}

void TcpConnection::OnWriteCb(uv_write_t* req, int status) {
  auto* c = static_cast<TcpConnection*>(req->handle->data);
  c->writing_ = false;
  if (c->closing_) return;
  if (c->io_deadline_ != 0) {
    c->io_deadline_ = 0;
    c->Rearm();
  }
  c->handler_->OnWritten(status);
}

void TcpConnection::Shutdown() {
  assert(connected_ && !shutdown_started_);
  if (closing_) return;
  shutdown_started_ = true;
  if (deferred_) {
    shutdown_after_flush_ = true;  // the FIN goes after the deferred bytes
    return;
  }
  StartShutdown();
}

void TcpConnection::StartShutdown() {
  int rc = uv_shutdown(&req_.shutdown, stream(), &OnShutdownCb);
  if (rc != 0) handler_->OnShutdown(rc);
}

void TcpConnection::OnShutdownCb(uv_shutdown_t* req, int status) {
  auto* c = static_cast<TcpConnection*>(req->handle->data);
  if (c->closing_) return;
  c->handler_->OnShutdown(status);
}

// ---------------------------------------------------------------- timers

void TcpConnection::Rearm() {
  uint64_t next = timer_deadline_;
  if (io_deadline_ != 0 && (next == 0 || io_deadline_ < next)) next = io_deadline_;
  if (next == 0) {
    timer_.Disarm();
  } else if (next != timer_.deadline()) {
    timer_.ArmAt(next);
  }
}

void TcpConnection::OnTimerCb(void* self) {
  auto* c = static_cast<TcpConnection*>(self);
  if (c->closing_) return;
  uint64_t now = uv_now(c->tcp_.loop);
  if (c->io_deadline_ != 0 && c->io_deadline_ <= now) {
    c->io_deadline_ = 0;
    if (c->connecting_) {
      c->connecting_ = false;  // the connect callback that may still come is ignored
      c->Rearm();
      c->handler_->OnConnect(UV_ETIMEDOUT);
    } else if (c->writing_ && c->tcp_.write_queue_size < c->write_queue_at_arm_) {
      // The kernel took some bytes since: the timeout counts from that progress.
      c->write_queue_at_arm_ = c->tcp_.write_queue_size;
      c->io_deadline_ = now + c->write_timeout_ms_;
      c->Rearm();
    } else if (c->writing_) {
      c->Rearm();
      c->handler_->OnWriteTimeout();
    }
    if (c->closing_) return;
  }
  if (c->timer_deadline_ != 0 && c->timer_deadline_ <= now) {
    c->timer_deadline_ = 0;
    c->Rearm();
    c->handler_->OnTimeout();
    return;
  }
  c->Rearm();
}

// ---------------------------------------------------------------- addresses, options

int TcpConnection::PeerSockaddr(sockaddr_storage* out) const {
  int len = sizeof(*out);
  return uv_tcp_getpeername(&tcp_, reinterpret_cast<sockaddr*>(out), &len);
}

int TcpConnection::LocalSockaddr(sockaddr_storage* out) const {
  int len = sizeof(*out);
  return uv_tcp_getsockname(&tcp_, reinterpret_cast<sockaddr*>(out), &len);
}

bool TcpConnection::PeerAddress(AddressText* out) const {
  sockaddr_storage ss{};
  return PeerSockaddr(&ss) == 0 && FormatAddress(reinterpret_cast<sockaddr*>(&ss), out);
}

bool TcpConnection::LocalAddress(AddressText* out) const {
  sockaddr_storage ss{};
  return LocalSockaddr(&ss) == 0 && FormatAddress(reinterpret_cast<sockaddr*>(&ss), out);
}

int TcpConnection::SetSendBufferSize(int bytes) {
  return uv_send_buffer_size(reinterpret_cast<uv_handle_t*>(&tcp_), &bytes);
}

int TcpConnection::SetReceiveBufferSize(int bytes) {
  return uv_recv_buffer_size(reinterpret_cast<uv_handle_t*>(&tcp_), &bytes);
}

int TcpConnection::SetKeepAlive(bool enable, unsigned delay_seconds) {
  return uv_tcp_keepalive(&tcp_, enable ? 1 : 0, delay_seconds);
}

}  // namespace turnpike::core
