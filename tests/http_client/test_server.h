// A scripted HTTP/1.1 server on the test's loop (127.0.0.1:0), built on core::TcpConnection:
// for each complete request (head + Content-Length body) it calls the test's handler, which
// answers with Send(), SendAfter() (late answers, streams), Close() and friends.
#pragma once

#include <gtest/gtest.h>
#include <uv.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/tcp_connection.h"
#include "core/tcp_test_util.h"
#include "http_client/request.h"

namespace turnpike::http_client::testing {

class TestServer;

struct ServerRequest {
  std::string head;  // request line and fields, up to and including the blank line
  std::string method, target, body;
  int conn = 0;     // which accepted connection (1, 2, ...)
  int on_conn = 0;  // its number on that connection (1, 2, ...)
  // The first field value named `name` (exact case), or "".
  std::string Field(const std::string& name) const {
    size_t p = head.find("\r\n" + name + ": ");
    if (p == std::string::npos) return "";
    p += name.size() + 4;
    return head.substr(p, head.find("\r\n", p) - p);
  }
};

class ServerConn final : public core::TcpConnection::Handler {
 public:
  ServerConn(TestServer* server, int index);

  // Queues bytes; they are written in order.
  void Send(std::string bytes) {
    queue_.push_back(std::move(bytes));
    Pump();
  }
  // Queues bytes `ms` after the previous SendAfter's (or from now when none is pending).
  void SendAfter(int ms, std::string bytes) {
    uint64_t base = scheduled_.empty() ? uv_now(tcp.loop()) : scheduled_.back().first;
    uint64_t due = base + static_cast<uint64_t>(ms);
    scheduled_.emplace_back(due, std::move(bytes));
    tcp.ArmTimer(static_cast<double>(scheduled_.front().first - uv_now(tcp.loop())) / 1000);
  }
  // Closes once everything queued and scheduled is written.
  void CloseAfterSend() {
    close_after_send_ = true;
    Pump();
  }
  void Close() { tcp.Close(); }

  core::TcpConnection tcp;
  bool peer_closed = false;

  // core::TcpConnection::Handler
  void OnReadBuffer(size_t, uv_buf_t* buf) override;
  void OnRead(char* data, size_t len) override;
  void OnReadEnd(int) override;
  void OnWritten(int status) override {
    if (status < 0) {
      tcp.Close();
      return;
    }
    Pump();
  }
  void OnTimeout() override {
    uint64_t now = uv_now(tcp.loop());
    while (!scheduled_.empty() && scheduled_.front().first <= now) {
      queue_.push_back(std::move(scheduled_.front().second));
      scheduled_.pop_front();
    }
    if (!scheduled_.empty()) {
      tcp.ArmTimer(static_cast<double>(scheduled_.front().first - now) / 1000);
    }
    Pump();
  }
  void OnClosed() override;

 private:
  friend class TestServer;
  void Pump() {
    if (tcp.writing() || tcp.closing()) return;
    if (queue_.empty()) {
      if (close_after_send_ && scheduled_.empty()) tcp.Close();
      return;
    }
    writing_ = std::move(queue_.front());
    queue_.pop_front();
    uv_buf_t b = uv_buf_init(writing_.data(), static_cast<unsigned>(writing_.size()));
    tcp.Write(&b, 1);
  }

  TestServer* server_;
  int index_;
  int requests_ = 0;
  std::string in_;
  char buf_[64 * 1024];
  std::deque<std::string> queue_;
  std::deque<std::pair<uint64_t, std::string>> scheduled_;
  std::string writing_;
  bool close_after_send_ = false;
};

class TestServer {
 public:
  using Handler = std::function<void(ServerConn& conn, const ServerRequest& req)>;

  TestServer(uv_loop_t* loop, Handler handler)
      : loop_(loop), handler_(std::move(handler)), listener_(loop, [this](uv_stream_t* s) {
          auto* c = new ServerConn(this, ++accepted);
          conns_.push_back(c);
          if (c->tcp.Accept(s) != 0) {
            c->Close();
            return;
          }
          c->tcp.StartReading();
        }) {}
  ~TestServer() {
    for (ServerConn* c : conns_) {
      c->server_ = nullptr;
      c->Close();
    }
  }

  Origin origin() const {
    Origin o;
    EXPECT_TRUE(Origin::FromIp("127.0.0.1", listener_.port(), &o));
    return o;
  }
  int port() const { return listener_.port(); }
  uv_loop_t* loop() const { return loop_; }

  int accepted = 0;
  int peer_closes = 0;      // connections whose client closed (EOF or reset)
  bool hold_reads = false;  // stop reading (a server that does not take the request)
  std::vector<ServerRequest> requests;

 private:
  friend class ServerConn;
  uv_loop_t* loop_;
  Handler handler_;
  core::testing::TestListener listener_;
  std::vector<ServerConn*> conns_;
};

inline ServerConn::ServerConn(TestServer* server, int index) : server_(server), index_(index) {
  tcp.Init(server->loop(), this);
}

inline void ServerConn::OnReadBuffer(size_t, uv_buf_t* buf) {
  if (server_ != nullptr && server_->hold_reads) return;
  *buf = uv_buf_init(buf_, sizeof(buf_));
}

inline void ServerConn::OnRead(char* data, size_t len) {
  in_.append(data, len);
  while (server_ != nullptr) {
    size_t end = in_.find("\r\n\r\n");
    if (end == std::string::npos) return;
    ServerRequest r;
    r.head = in_.substr(0, end + 4);
    std::string cl = r.Field("Content-Length");
    size_t body_len = cl.empty() ? 0 : std::stoul(cl);
    if (in_.size() < end + 4 + body_len) return;
    r.body = in_.substr(end + 4, body_len);
    in_.erase(0, end + 4 + body_len);
    size_t sp = r.head.find(' ');
    r.method = r.head.substr(0, sp);
    r.target = r.head.substr(sp + 1, r.head.find(' ', sp + 1) - sp - 1);
    r.conn = index_;
    r.on_conn = ++requests_;
    server_->requests.push_back(r);
    server_->handler_(*this, r);
    if (tcp.closing()) return;
  }
}

inline void ServerConn::OnReadEnd(int) {
  peer_closed = true;
  if (server_ != nullptr) ++server_->peer_closes;
  if (queue_.empty() && scheduled_.empty()) tcp.Close();
}

inline void ServerConn::OnClosed() {
  if (server_ != nullptr) {
    auto& v = server_->conns_;
    v.erase(std::remove(v.begin(), v.end(), this), v.end());
  }
  delete this;
}

// "HTTP/1.1 <status> X\r\nContent-Length: n\r\n<extra>\r\n<body>"
inline std::string Answer(int status, const std::string& body, const std::string& extra = "") {
  return "HTTP/1.1 " + std::to_string(status) +
         " X\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra + "\r\n" + body;
}

inline std::string Chunk(const std::string& data) {
  char size[20];
  snprintf(size, sizeof(size), "%zx\r\n", data.size());
  return size + data + "\r\n";
}

}  // namespace turnpike::http_client::testing
