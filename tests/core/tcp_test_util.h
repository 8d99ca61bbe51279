// Helpers for tests over real loopback sockets on one libuv loop: a loop that runs until a
// condition holds, a listener, and a recording TcpConnection owner.
#pragma once

#include <gtest/gtest.h>
#include <uv.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/buffer_pool.h"
#include "core/tcp_connection.h"

namespace turnpike::core::testing {

// A loop owned by the test. RunUntil() never blocks longer than a few ms per iteration.
class TestLoop {
 public:
  TestLoop() {
    uv_loop_init(&loop_);
    uv_timer_init(&loop_, &tick_);
    uv_timer_start(
        &tick_, [](uv_timer_t*) {}, 2, 2);
  }
  ~TestLoop() {
    uv_close(reinterpret_cast<uv_handle_t*>(&tick_), nullptr);
    // Let every close callback run, then the loop must be empty.
    for (int i = 0; i < 100 && uv_loop_alive(&loop_); ++i) uv_run(&loop_, UV_RUN_NOWAIT);
    EXPECT_EQ(uv_loop_close(&loop_), 0) << "handles left open on the test loop";
  }
  uv_loop_t* get() { return &loop_; }

  // Runs the loop until `done` or `timeout`; returns done().
  bool RunUntil(const std::function<bool()>& done,
                std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
      if (std::chrono::steady_clock::now() > end) return false;
      uv_run(&loop_, UV_RUN_ONCE);
    }
    return true;
  }
  // Runs the loop for about `ms` milliseconds.
  void RunFor(int ms) {
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    RunUntil([&] { return std::chrono::steady_clock::now() >= end; },
             std::chrono::milliseconds(ms + 1000));
  }

 private:
  uv_loop_t loop_{};
  uv_timer_t tick_{};
};

// 127.0.0.1:0, listening. `on_connection` runs in libuv's connection callback. `rcvbuf` > 0
// sets SO_RCVBUF before listening, so accepted sockets start with it (setting it on an
// established connection can stall it: the window it advertised already cannot shrink).
class TestListener {
 public:
  TestListener(uv_loop_t* loop, std::function<void(uv_stream_t*)> on_connection, int rcvbuf = 0)
      : tcp_(new uv_tcp_t), on_connection_(std::move(on_connection)) {
    uv_tcp_init(loop, tcp_);
    tcp_->data = this;
    sockaddr_in addr{};
    uv_ip4_addr("127.0.0.1", 0, &addr);
    EXPECT_EQ(uv_tcp_bind(tcp_, reinterpret_cast<sockaddr*>(&addr), 0), 0);
    if (rcvbuf > 0) uv_recv_buffer_size(reinterpret_cast<uv_handle_t*>(tcp_), &rcvbuf);
    const int backlog = 64;
    EXPECT_EQ(uv_listen(reinterpret_cast<uv_stream_t*>(tcp_), backlog,
                        [](uv_stream_t* s, int status) {
                          if (status == 0) static_cast<TestListener*>(s->data)->on_connection_(s);
                        }),
              0);
    sockaddr_storage ss{};
    int len = sizeof(ss);
    uv_tcp_getsockname(tcp_, reinterpret_cast<sockaddr*>(&ss), &len);
    port_ = ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  }
  // The handle is freed in its close callback, when the loop runs next (TestLoop's destructor
  // runs it at the latest).
  ~TestListener() {
    uv_close(reinterpret_cast<uv_handle_t*>(tcp_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_tcp_t*>(h); });
  }
  TestListener(const TestListener&) = delete;
  TestListener& operator=(const TestListener&) = delete;
  int port() const { return port_; }
  sockaddr_in addr() const {
    sockaddr_in a{};
    uv_ip4_addr("127.0.0.1", port_, &a);
    return a;
  }

 private:
  uv_tcp_t* tcp_;
  std::function<void(uv_stream_t*)> on_connection_;
  int port_ = 0;
};

// Records everything a TcpConnection reports. Reads into `in` through a fixed buffer of
// `read_capacity` bytes, or through buffers lent by `pool` (taken in OnReadBuffer, given back
// when unused or once copied), so tests can check that nothing is held while idle. A read
// stops (back-pressure) while `in` holds `max_buffered` bytes or more.
class Recorder : public TcpConnection::Handler {
 public:
  explicit Recorder(uv_loop_t* loop, BufferPool* pool = nullptr) : pool_(pool) {
    conn.Init(loop, this);
  }
  // The test ends with the loop draining close callbacks; a recorder that was never closed
  // is closed here (its memory must then outlive the loop run: keep recorders in a
  // std::unique_ptr the test frees after TestLoop's destructor, or Close() + RunUntil).
  ~Recorder() { EXPECT_TRUE(closed > 0 || !conn.closing()) << "freed before OnClosed"; }

  void OnConnect(int status) override {
    ++connects;
    connect_status = status;
    if (on_connect) on_connect(status);
  }
  void OnReadBuffer(size_t, uv_buf_t* buf) override {
    if (in.size() >= max_buffered) return;  // zero length: reading stops
    if (pool_ != nullptr) {
      if (lent_ == nullptr) lent_ = pool_->Take();
      *buf = uv_buf_init(lent_, static_cast<unsigned>(pool_->buffer_size()));
    } else {
      *buf = uv_buf_init(fixed_, read_capacity);
    }
  }
  void OnRead(char* data, size_t len) override {
    in.append(data, len);
    ++reads;
    if (pool_ != nullptr) Give();  // copied: the buffer goes back at once
    if (on_read) on_read();
  }
  void OnReadBufferUnused(const uv_buf_t&) override {
    ++unused;
    if (pool_ != nullptr) Give();
  }
  void OnReadEnd(int status) override {
    ++read_ends;
    read_end_status = status;
    if (on_read_end) on_read_end(status);
  }
  void OnWritten(int status) override {
    ++writes_done;
    write_status = status;
    if (on_written) on_written(status);
  }
  void OnWriteTimeout() override {
    ++write_timeouts;
    if (on_write_timeout) on_write_timeout();
  }
  void OnShutdown(int status) override {
    ++shutdowns;
    shutdown_status = status;
  }
  void OnTimeout() override {
    ++timeouts;
    if (on_timeout) on_timeout();
  }
  void OnClosed() override { ++closed; }

  // Writes `data` (kept in `out` until completion).
  void Send(std::string data) {
    out = std::move(data);
    uv_buf_t b = uv_buf_init(out.data(), static_cast<unsigned>(out.size()));
    conn.Write(&b, 1);
  }
  bool holds_buffer() const { return lent_ != nullptr; }

  TcpConnection conn;
  std::string in;
  std::string out;
  size_t max_buffered = SIZE_MAX;
  unsigned read_capacity = sizeof(fixed_);
  int connects = 0, connect_status = 1;
  int reads = 0, unused = 0, read_ends = 0, read_end_status = 0;
  int writes_done = 0, write_status = 1, write_timeouts = 0;
  int shutdowns = 0, shutdown_status = 1;
  int timeouts = 0, closed = 0;
  std::function<void(int)> on_connect, on_written, on_read_end;
  std::function<void()> on_read, on_timeout, on_write_timeout;

 private:
  void Give() {
    if (lent_ != nullptr) pool_->Return(lent_);
    lent_ = nullptr;
  }
  BufferPool* pool_;
  char* lent_ = nullptr;
  char fixed_[16 * 1024];
};

}  // namespace turnpike::core::testing
