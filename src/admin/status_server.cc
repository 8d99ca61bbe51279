#include "admin/status_server.h"

#include <unistd.h>

#include <algorithm>

#include "core/listen_socket.h"
#include "core/tcp_connection.h"
#include "http/message.h"
#include "http/parser.h"

namespace turnpike::admin {
namespace {

constexpr double kIdleTimeoutSeconds = StatusServer::kIdleTimeoutMs / 1000.0;
constexpr std::string_view kJson = "application/json";
constexpr double kLingerSeconds = 2;  // after a closing answer, wait this long for the EOF

uv_handle_t* AsHandle(auto* h) { return reinterpret_cast<uv_handle_t*>(h); }
uv_stream_t* AsStream(auto* h) { return reinterpret_cast<uv_stream_t*>(h); }

std::string ErrorJson(int status) {
  return std::string("{\"error_msg\":\"") + std::string(http::ReasonPhrase(status)) + "\"}\n";
}

}  // namespace

// One client connection. Listed in the server's conns_; deletes itself in OnClosed.
struct StatusServer::Conn final : core::TcpConnection::Handler {
  explicit Conn(StatusServer* s) : server(s) { tcp.Init(s->loop_, this); }

  StatusServer* server;
  core::TcpConnection tcp;
  char read_buf[4096];
  std::string in;           // received bytes not answered yet
  size_t scan_pos = 0;      // FindHeadEnd resume point in `in`
  std::string out;          // the answer being written
  bool processing = false;  // inside Process(): a write completion returns to its loop
  bool close_after = false;
  bool lingering = false;  // answered and shut down: discarding input until EOF
  http::RequestParser parser;
  http::RequestHead head;

  void Touch() { tcp.ArmTimer(kIdleTimeoutSeconds); }
  void Close() { tcp.Close(); }

  // ---- core::TcpConnection::Handler ----
  void OnReadBuffer(size_t, uv_buf_t* buf) override {
    *buf = uv_buf_init(read_buf, sizeof(read_buf));
  }
  void OnRead(char* data, size_t len) override {
    if (lingering) return;
    Touch();
    in.append(data, len);
    Process();
  }
  void OnReadEnd(int) override { Close(); }
  void OnWritten(int status) override {
    if (status < 0) {
      Close();
      return;
    }
    Written();
    if (!processing && !tcp.closing()) {  // a queued write finished: go on reading
      tcp.StartReading();
      Process();
    }
  }
  void OnShutdown(int status) override {
    if (status < 0) Close();
  }
  void OnTimeout() override { Close(); }  // idle, or the linger ended
  void OnClosed() override {
    server->Forget(this);
    delete this;
  }

  // Answers every complete request in `in`, one at a time.
  void Process() {
    processing = true;
    while (!tcp.writing() && !lingering && !tcp.closing()) {
      size_t head_len = http::FindHeadEnd(in, &scan_pos);
      if (head_len == 0) {
        if (in.size() > kMaxHead) Answer(400, kJson, ErrorJson(400), /*head_only=*/false, true);
        break;
      }
      int rc = parser.ParseHead(in.data(), head_len, &head);
      if (rc != 0) {
        Answer(rc, kJson, ErrorJson(rc), false, true);
        break;
      }
      // No bodies here: answer, then close rather than skip body bytes.
      bool has_body = !parser.message_complete();
      HttpAnswer a = server->handler_(head.method, head.path);
      Answer(a.status, a.content_type, std::move(a.body), head.method == base::Method::kHead,
             has_body || !head.keep_alive);
      in.erase(0, head_len);  // after Answer: `head` views point into `in`
      scan_pos = 0;
    }
    processing = false;
  }

  void Answer(int status, std::string_view content_type, std::string body, bool head_only,
              bool close) {
    close_after = close;
    out.clear();
    out += "HTTP/1.1 " + std::to_string(status) + " ";
    out += http::ReasonPhrase(status);
    out += "\r\nContent-Type: ";
    out += content_type;
    out += "\r\nContent-Length: ";
    out += std::to_string(body.size());
    out += close ? "\r\nConnection: close\r\n\r\n" : "\r\n\r\n";
    if (!head_only) out += body;
    uv_buf_t buf = uv_buf_init(out.data(), static_cast<unsigned>(out.size()));
    tcp.Write(&buf, 1);                    // may complete (OnWritten) right here
    if (tcp.writing()) tcp.StopReading();  // one answer at a time: read again once it is out
  }

  // The answer is out: go on with the next request, or shut down and wait for the peer's EOF
  // (closing with unread input would reset the connection and could destroy the answer).
  void Written() {
    Touch();
    if (!close_after) return;
    lingering = true;
    in.clear();
    tcp.Shutdown();
    if (tcp.closing()) return;
    tcp.ArmTimer(kLingerSeconds);
    tcp.StartReading();
  }
};

StatusServer::StatusServer(uv_loop_t* loop, std::function<StatusReport()> report)
    : StatusServer(loop, [report = std::move(report)](base::Method method, std::string_view path) {
        StatusAnswer a = AnswerStatusRequest(method, path, report());
        return HttpAnswer{a.status, "application/json", std::move(a.body)};
      }) {}

StatusServer::StatusServer(uv_loop_t* loop, Handler handler)
    : loop_(loop), handler_(std::move(handler)) {}

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
  return Status::Ok();
}

void StatusServer::Close() {
  if (closed_) return;
  closed_ = true;
  if (listening_) {
    uv_close(AsHandle(&listener_), nullptr);
  }
  for (Conn* c : conns_) c->Close();
}

void StatusServer::OnConnection(uv_stream_t* server, int status) {
  auto* s = static_cast<StatusServer*>(server->data);
  if (status < 0 || s->closed_) return;
  auto* c = new Conn(s);
  s->conns_.push_back(c);
  if (c->tcp.Accept(server) != 0 || s->conns_.size() > kMaxConnections) {
    c->Close();
    return;
  }
  c->Touch();
  c->tcp.StartReading();
}

void StatusServer::Forget(Conn* conn) {
  conns_.erase(std::remove(conns_.begin(), conns_.end(), conn), conns_.end());
}

}  // namespace turnpike::admin
