#include "admin/status_server.h"

#include <unistd.h>

#include <algorithm>

#include "core/listen_socket.h"
#include "http/message.h"
#include "http/parser.h"

namespace turnpike::admin {
namespace {

constexpr uint64_t kSweepIntervalMs = 1000;
constexpr uint64_t kLingerMs = 2000;  // after a closing answer, wait this long for the EOF

uv_handle_t* AsHandle(auto* h) { return reinterpret_cast<uv_handle_t*>(h); }
uv_stream_t* AsStream(auto* h) { return reinterpret_cast<uv_stream_t*>(h); }

std::string ErrorJson(int status) {
  return std::string("{\"error_msg\":\"") + std::string(http::ReasonPhrase(status)) + "\"}\n";
}

}  // namespace

// One client connection. Owned by the server's conns_ list; deleted in its close callback.
struct StatusServer::Conn {
  explicit Conn(StatusServer* s) : server(s) {}

  StatusServer* server;
  uv_tcp_t tcp{};
  uv_write_t write_req{};
  uv_shutdown_t shutdown_req{};
  char read_buf[4096];
  std::string in;        // received bytes not answered yet
  size_t scan_pos = 0;   // FindHeadEnd resume point in `in`
  std::string out;       // the answer being written
  bool writing = false;  // an asynchronous write is in flight (reading is stopped)
  bool close_after = false;
  bool lingering = false;  // answered and shut down: discarding input until EOF
  bool closing = false;
  uint64_t last_active = 0;
  http::RequestParser parser;
  http::RequestHead head;

  void Touch() { last_active = uv_now(server->loop_); }

  void Close() {
    if (closing) return;
    closing = true;
    uv_close(AsHandle(&tcp), [](uv_handle_t* h) {
      auto* c = static_cast<Conn*>(h->data);
      c->server->Forget(c);
      delete c;
    });
  }

  // Answers every complete request in `in`, one at a time.
  void Process() {
    while (!writing && !lingering && !closing) {
      size_t head_len = http::FindHeadEnd(in, &scan_pos);
      if (head_len == 0) {
        if (in.size() > kMaxHead) Answer(400, ErrorJson(400), /*head_only=*/false, true);
        return;
      }
      int rc = parser.ParseHead(in.data(), head_len, &head);
      if (rc != 0) {
        Answer(rc, ErrorJson(rc), false, true);
        return;
      }
      // No bodies here: answer, then close rather than skip body bytes.
      bool has_body = !parser.message_complete();
      StatusAnswer a = AnswerStatusRequest(head.method, head.path, server->report_());
      Answer(a.status, std::move(a.body), head.method == base::Method::kHead,
             has_body || !head.keep_alive);
      in.erase(0, head_len);  // after Answer: `head` views point into `in`
      scan_pos = 0;
    }
  }

  void Answer(int status, std::string body, bool head_only, bool close) {
    close_after = close;
    out.clear();
    out += "HTTP/1.1 " + std::to_string(status) + " ";
    out += http::ReasonPhrase(status);
    out += "\r\nContent-Type: application/json\r\nContent-Length: ";
    out += std::to_string(body.size());
    out += close ? "\r\nConnection: close\r\n\r\n" : "\r\n\r\n";
    if (!head_only) out += body;
    uv_buf_t buf = uv_buf_init(out.data(), static_cast<unsigned>(out.size()));
    int n = uv_try_write(AsStream(&tcp), &buf, 1);
    if (n == static_cast<int>(out.size())) {
      Written();
      return;
    }
    if (n < 0 && n != UV_EAGAIN) {
      Close();
      return;
    }
    size_t done = n > 0 ? static_cast<size_t>(n) : 0;
    buf = uv_buf_init(out.data() + done, static_cast<unsigned>(out.size() - done));
    writing = true;
    uv_read_stop(AsStream(&tcp));
    uv_write(&write_req, AsStream(&tcp), &buf, 1, [](uv_write_t* req, int st) {
      auto* c = static_cast<Conn*>(req->handle->data);
      c->writing = false;
      if (c->closing) return;
      if (st < 0) {
        c->Close();
        return;
      }
      c->Written();
      if (!c->closing && !c->lingering) {
        c->StartReading();
        c->Process();
      }
    });
  }

  // The answer is out: go on with the next request, or shut down and wait for the peer's EOF
  // (closing with unread input would reset the connection and could destroy the answer).
  void Written() {
    Touch();
    if (!close_after) return;
    lingering = true;
    in.clear();
    if (uv_shutdown(&shutdown_req, AsStream(&tcp), [](uv_shutdown_t*, int) {}) != 0) {
      Close();
      return;
    }
    if (!writing) StartReading();
  }

  void StartReading() {
    uv_read_start(
        AsStream(&tcp),
        [](uv_handle_t* h, size_t, uv_buf_t* buf) {
          auto* c = static_cast<Conn*>(h->data);
          *buf = uv_buf_init(c->read_buf, sizeof(c->read_buf));
        },
        [](uv_stream_t* s, ssize_t nread, const uv_buf_t* buf) {
          auto* c = static_cast<Conn*>(s->data);
          if (nread < 0) {
            c->Close();
            return;
          }
          if (nread == 0 || c->lingering) return;
          c->Touch();
          c->in.append(buf->base, static_cast<size_t>(nread));
          c->Process();
        });
  }
};

StatusServer::StatusServer(uv_loop_t* loop, std::function<StatusReport()> report)
    : loop_(loop), report_(std::move(report)) {}

StatusServer::~StatusServer() = default;

Status StatusServer::Listen(const config::ListenAddr& addr) {
  core::ListenOptions options;
  options.ip = addr.ip;
  options.port = addr.port;
  options.reuseport = false;
  options.backlog = 64;
  StatusOr<int> fd = core::CreateListenSocket(options);
  if (!fd.ok()) return fd.status();
  uv_tcp_init(loop_, &listener_);
  listener_.data = this;
  listening_ = true;
  int rc = uv_tcp_open(&listener_, fd.value());
  if (rc != 0) {
    close(fd.value());
    return Status::Error("status listener: " + std::string(uv_strerror(rc)));
  }
  rc = uv_listen(AsStream(&listener_), 64, &OnConnection);
  if (rc != 0) return Status::Error("status listener: " + std::string(uv_strerror(rc)));
  port_ = core::LocalPort(fd.value());
  uv_timer_init(loop_, &sweep_);
  sweep_.data = this;
  sweeping_ = true;
  uv_timer_start(&sweep_, &OnSweep, kSweepIntervalMs, kSweepIntervalMs);
  return Status::Ok();
}

void StatusServer::Close() {
  if (closed_) return;
  closed_ = true;
  if (listening_) {
    uv_close(AsHandle(&listener_), nullptr);
  }
  if (sweeping_) uv_close(AsHandle(&sweep_), nullptr);
  for (Conn* c : conns_) c->Close();
}

void StatusServer::OnConnection(uv_stream_t* server, int status) {
  auto* s = static_cast<StatusServer*>(server->data);
  if (status < 0 || s->closed_) return;
  auto* c = new Conn(s);
  uv_tcp_init(s->loop_, &c->tcp);
  c->tcp.data = c;
  s->conns_.push_back(c);
  if (uv_accept(server, AsStream(&c->tcp)) != 0 || s->conns_.size() > kMaxConnections) {
    c->Close();
    return;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  c->Touch();
  c->StartReading();
}

void StatusServer::OnSweep(uv_timer_t* timer) {
  auto* s = static_cast<StatusServer*>(timer->data);
  uint64_t now = uv_now(s->loop_);
  for (Conn* c : s->conns_) {
    uint64_t limit = c->lingering ? kLingerMs : kIdleTimeoutMs;
    if (now - c->last_active >= limit) c->Close();
  }
}

void StatusServer::Forget(Conn* conn) {
  conns_.erase(std::remove(conns_.begin(), conns_.end(), conn), conns_.end());
}

}  // namespace turnpike::admin
