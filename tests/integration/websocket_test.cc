// Websocket through the daemon (enable_websocket): the upgrade request forwarded with its Upgrade
// and Connection headers, the node's 101 to the client, then frames both ways through the tunnel
// (tests/support/websocket.h's echo server behind it), large ones with a slow reader, a close from
// either side, the idle timeout, the access log line at the end; and the upgrade refused without
// enable_websocket, a node answering something else than 101.

#include "support/websocket.h"

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "integration/itest.h"
#include "support/files.h"
#include "support/proc_status.h"

namespace turnpike::itest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kRoutes[] = R"(
services:
  - id: ws-service
    enable_websocket: true
    upstream: {nodes: [{NODE}]}
routes:
  - uri: /ws/*
    enable_websocket: true
    upstream: {nodes: [{NODE}]}
  - uri: /idle/*
    enable_websocket: true
    timeout: {connect: 1, send: 1, read: 1}
    upstream: {nodes: [{NODE}]}
  - uri: /svc/*
    service_id: ws-service
  - uri: /svc-off/*
    service_id: ws-service
    enable_websocket: false
  - uri: /*
    upstream: {nodes: [{NODE}]}
#END
)";

class WebsocketTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NE(server_.port(), 0); }

  void Start(TurnpikeOptions options = {}) {
    options.worker_processes = 1;
    ASSERT_NO_FATAL_FAILURE(
        StartGateway(gw_, Fill(kRoutes, {{"NODE", Node(server_.port())}}), options));
  }

  // The last request head the node received.
  std::string LastHead() const {
    std::vector<std::string> heads = server_.heads();
    return heads.empty() ? "" : heads.back();
  }

  static void ExpectSwitched(const WsClient& c) {
    ASSERT_EQ(c.status(), 101) << c.response_head();
    EXPECT_EQ(c.Header("sec-websocket-accept"), WsAcceptKey(c.key())) << c.response_head();
    EXPECT_EQ(c.Header("upgrade"), "websocket") << c.response_head();
    EXPECT_EQ(c.Header("connection"), "upgrade") << c.response_head();
    EXPECT_EQ(c.Header("content-length"), "") << c.response_head();
    EXPECT_EQ(c.Header("transfer-encoding"), "") << c.response_head();
  }

  static void ExpectEcho(WsClient& c, WsOpcode op, const std::string& payload) {
    ASSERT_TRUE(c.Send(op, payload));
    std::string error;
    std::optional<WsFrame> f = c.Read(seconds(10), &error);
    ASSERT_TRUE(f.has_value()) << error;
    EXPECT_EQ(f->opcode, op);
    EXPECT_EQ(f->payload.size(), payload.size());
    EXPECT_TRUE(f->payload == payload) << "echoed payload differs";
  }

  WsEchoServer server_;
  Turnpike gw_{kTurnpikeBin};
};

TEST_F(WebsocketTest, FramesGoBothWaysAfterTheSwitch) {
  ASSERT_NO_FATAL_FAILURE(Start());
  WsClient c;
  ASSERT_TRUE(c.Handshake(gw_.port(), "/ws/chat?room=1"));
  ASSERT_NO_FATAL_FAILURE(ExpectSwitched(c));
  // The node got the upgrade as a websocket server needs it.
  std::string head = LastHead();
  EXPECT_EQ(head.rfind("GET /ws/chat?room=1 HTTP/1.1\r\n", 0), 0u) << head;
  EXPECT_NE(head.find("\r\nUpgrade: websocket\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("\r\nConnection: upgrade\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("\r\nSec-WebSocket-Key: " + c.key() + "\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("\r\nSec-WebSocket-Version: 13\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("\r\nX-Forwarded-For: 127.0.0.1\r\n"), std::string::npos) << head;

  ASSERT_NO_FATAL_FAILURE(ExpectEcho(c, WsOpcode::kText, "hello through turnpike"));
  ASSERT_NO_FATAL_FAILURE(ExpectEcho(c, WsOpcode::kBinary, std::string("\0\x01\xff\r\n", 5)));
  ASSERT_NO_FATAL_FAILURE(ExpectEcho(c, WsOpcode::kText, std::string(300, 'm')));  // 16-bit len
  ASSERT_TRUE(c.Send(WsOpcode::kPing, "are you there"));
  std::optional<WsFrame> pong = c.Read();
  ASSERT_TRUE(pong.has_value());
  EXPECT_EQ(pong->opcode, WsOpcode::kPong);
  EXPECT_EQ(pong->payload, "are you there");
  // Several frames in one write come back in order.
  std::string burst;
  for (int i = 0; i < 20; ++i) {
    burst += EncodeWsFrame(WsOpcode::kText, "frame " + std::to_string(i),
                           /*mask=*/true);
  }
  ASSERT_TRUE(c.SendRaw(burst));
  for (int i = 0; i < 20; ++i) {
    std::optional<WsFrame> f = c.Read();
    ASSERT_TRUE(f.has_value()) << i;
    EXPECT_EQ(f->payload, "frame " + std::to_string(i));
  }
  EXPECT_EQ(server_.connections(), 1);
}

// The node's first frame rides in the same packet as its 101; a client that does not wait for the
// 101 has its first frame relayed too.
TEST_F(WebsocketTest, BytesAroundTheSwitchAreRelayed) {
  ASSERT_NO_FATAL_FAILURE(Start());
  WsClient c;
  ASSERT_TRUE(c.Handshake(gw_.port(), "/ws/greet"));
  ASSERT_NO_FATAL_FAILURE(ExpectSwitched(c));
  std::optional<WsFrame> hello = c.Read();
  ASSERT_TRUE(hello.has_value());
  EXPECT_EQ(hello->payload, "hello");
  ASSERT_NO_FATAL_FAILURE(ExpectEcho(c, WsOpcode::kText, "after greeting"));

  // The handshake and a frame in one write.
  int fd = ConnectLoopback(gw_.port(), seconds(5));
  ASSERT_GE(fd, 0);
  std::string bytes =
      "GET /ws/eager HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: "
      "keep-alive, "
      "Upgrade\r\nSec-WebSocket-Key: "
      "dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
      "\r\n" +
      EncodeWsFrame(WsOpcode::kText, "eager", true);
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(bytes.size()));
  std::string pending;
  std::string got;
  char buf[4096];
  auto deadline = std::chrono::steady_clock::now() + seconds(5);
  while (got.find("\r\n\r\n") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  size_t end = got.find("\r\n\r\n");
  ASSERT_NE(end, std::string::npos) << got;
  EXPECT_EQ(got.rfind("HTTP/1.1 101 ", 0), 0u) << got;
  EXPECT_NE(got.find("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"),
            std::string::npos)
      << got;  // RFC 6455's own example key
  pending = got.substr(end + 4);
  std::optional<WsFrame> f = ReadWsFrame(fd, &pending, seconds(5));
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->payload, "eager");
  ::close(fd);
}

// Frames far larger than the gateway's buffers, both ways, with a client that does not read for a
// while: the tunnel stops reading the sending side until the other side took the bytes, so nothing
// is lost, reordered or buffered without bound.
TEST_F(WebsocketTest, LargeFramesWithASlowReader) {
  ASSERT_NO_FATAL_FAILURE(Start());
  WsClient c;
  ASSERT_TRUE(c.Handshake(gw_.port(), "/ws/big"));
  ASSERT_NO_FATAL_FAILURE(ExpectSwitched(c));
  ProcMemory before = TreeMemory(gw_.Pid());

  constexpr size_t kUp = 8 << 20;
  std::string up = WsPattern(kUp, 7);
  // The node stops reading for a while: the frame piles up against it. Then it reads the whole
  // frame before echoing it, so the client's send can finish before it reads.
  ASSERT_TRUE(c.Send(WsOpcode::kText, "pause:400"));
  std::thread sender([&] { EXPECT_TRUE(c.Send(WsOpcode::kBinary, up)); });
  sender.join();
  std::this_thread::sleep_for(milliseconds(300));  // the echo piles up against the client
  std::optional<WsFrame> echoed = c.Read(seconds(30));
  ASSERT_TRUE(echoed.has_value());
  EXPECT_EQ(echoed->payload.size(), kUp);
  EXPECT_TRUE(echoed->payload == up) << "the 8 MiB frame came back altered";

  constexpr size_t kDown = 32 << 20;
  ASSERT_TRUE(c.Send(WsOpcode::kText, "send:" + std::to_string(kDown)));
  std::this_thread::sleep_for(milliseconds(500));  // the node's 32 MiB wait for the reader
  std::optional<WsFrame> big = c.Read(seconds(60));
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(big->payload.size(), kDown);
  EXPECT_TRUE(big->payload == WsPattern(kDown)) << "the 32 MiB frame came back altered";
  ASSERT_NO_FATAL_FAILURE(ExpectEcho(c, WsOpcode::kText, "still in order"));

  ProcMemory after = TreeMemory(gw_.Pid());
  // The tunnel relays through the connections' fixed buffers: 48 MiB went through.
  EXPECT_LT(after.vm_hwm_kb - before.vm_hwm_kb, 8 * 1024)
      << "peak RSS grew from " << before.vm_hwm_kb << " kB to " << after.vm_hwm_kb << " kB";
}

TEST_F(WebsocketTest, CloseFromTheClient) {
  ASSERT_NO_FATAL_FAILURE(Start());
  {
    WsClient c;
    ASSERT_TRUE(c.Handshake(gw_.port(), "/ws/close"));
    ASSERT_NO_FATAL_FAILURE(ExpectSwitched(c));
    ASSERT_TRUE(c.Send(WsOpcode::kClose, "\x03\xe8"));  // 1000
    std::optional<WsFrame> f = c.Read();
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->opcode, WsOpcode::kClose);
    EXPECT_EQ(f->payload, "\x03\xe8");
    EXPECT_TRUE(c.WaitForClose(seconds(5)));  // the node closed: so does the gateway
  }
  {
    // A client that only half-closes (nothing more to send): the gateway relays what it sent, then
    // ends both sides, as nginx.
    int ended = server_.ended_connections();
    WsClient c;
    ASSERT_TRUE(c.Handshake(gw_.port(), "/ws/half"));
    ASSERT_NO_FATAL_FAILURE(ExpectSwitched(c));
    ASSERT_TRUE(c.Send(WsOpcode::kText, "last words"));
    c.ShutdownWrite();
    EXPECT_TRUE(PollUntil([&] { return server_.ended_connections() > ended; }, seconds(5)))
        << "the node's connection was not closed after the client's EOF";
    EXPECT_TRUE(c.WaitForClose(seconds(5)));
  }
  {
    // A client that goes away at once.
    int ended = server_.ended_connections();
    auto c = std::make_unique<WsClient>();
    ASSERT_TRUE(c->Handshake(gw_.port(), "/ws/gone"));
    ASSERT_NO_FATAL_FAILURE(ExpectSwitched(*c));
    c.reset();
    EXPECT_TRUE(PollUntil([&] { return server_.ended_connections() > ended; }, seconds(5)));
  }
}

TEST_F(WebsocketTest, CloseFromTheNode) {
  ASSERT_NO_FATAL_FAILURE(Start());
  WsClient c;
  ASSERT_TRUE(c.Handshake(gw_.port(), "/ws/bye"));
  ASSERT_NO_FATAL_FAILURE(ExpectSwitched(c));
  ASSERT_TRUE(c.Send(WsOpcode::kText, "close-me"));
  std::optional<WsFrame> f = c.Read();
  ASSERT_TRUE(f.has_value());  // the node's close frame is flushed before the end
  EXPECT_EQ(f->opcode, WsOpcode::kClose);
  EXPECT_EQ(f->payload, "\x03\xe8");
  EXPECT_TRUE(c.WaitForClose(seconds(5)));
}

// The route's read timeout is the tunnel's idle timeout: traffic either way restarts it.
TEST_F(WebsocketTest, IdleTimeoutEndsTheTunnel) {
  ASSERT_NO_FATAL_FAILURE(Start());
  WsClient c;
  ASSERT_TRUE(c.Handshake(gw_.port(), "/idle/x"));
  ASSERT_NO_FATAL_FAILURE(ExpectSwitched(c));
  int ended = server_.ended_connections();
  for (int i = 0; i < 4; ++i) {  // 4 x 0.5 s of traffic: longer than the 1 s timeout
    std::this_thread::sleep_for(milliseconds(500));
    ASSERT_NO_FATAL_FAILURE(ExpectEcho(c, WsOpcode::kText, "tick " + std::to_string(i)));
  }
  auto idle_from = std::chrono::steady_clock::now();
  EXPECT_TRUE(c.WaitForClose(seconds(5)));
  auto waited = std::chrono::steady_clock::now() - idle_from;
  EXPECT_GE(waited, milliseconds(800));
  EXPECT_LT(waited, milliseconds(3000));
  EXPECT_TRUE(PollUntil([&] { return server_.ended_connections() > ended; }, seconds(5)));
}

// Without enable_websocket the upgrade headers are dropped: the node answers as an HTTP server, and
// the connection stays an HTTP one.
TEST_F(WebsocketTest, UpgradeDroppedWithoutEnableWebsocket) {
  ASSERT_NO_FATAL_FAILURE(Start());
  for (const char* path : {"/plain-route", "/svc-off/x"}) {
    SCOPED_TRACE(path);
    WsClient c;
    ASSERT_TRUE(c.Handshake(gw_.port(), path));
    EXPECT_EQ(c.status(), 426) << c.response_head();
    EXPECT_EQ(c.response_body(), "no upgrade");
    EXPECT_EQ(c.Header("upgrade"), "");
    std::string head = LastHead();
    EXPECT_EQ(head.find("Upgrade:"), std::string::npos) << head;
    EXPECT_EQ(head.find("Connection:"), std::string::npos) << head;
    EXPECT_NE(head.find("Sec-WebSocket-Key:"), std::string::npos) << head;  // end to end
    // Still HTTP: the next request on the same connection.
    ASSERT_TRUE(c.SendRaw("GET /plain HTTP/1.1\r\nHost: x\r\n\r\n"));
    std::string answer;
    ASSERT_TRUE(c.ReadUntil("no upgrade", &answer, seconds(5)));
    EXPECT_EQ(answer.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << answer;
  }
  // enable_websocket from the service.
  WsClient c;
  ASSERT_TRUE(c.Handshake(gw_.port(), "/svc/x"));
  ASSERT_NO_FATAL_FAILURE(ExpectSwitched(c));
  ASSERT_NO_FATAL_FAILURE(ExpectEcho(c, WsOpcode::kText, "via service"));
}

// A node that does not switch: its answer is an ordinary response, the connection an ordinary
// keep-alive one.
TEST_F(WebsocketTest, AnswerOtherThan101IsProxiedAsUsual) {
  ASSERT_NO_FATAL_FAILURE(Start());
  WsClient c;
  ASSERT_TRUE(c.Handshake(gw_.port(), "/ws/deny"));
  EXPECT_EQ(c.status(), 403) << c.response_head();
  EXPECT_EQ(c.response_body(), "denied");
  // Still HTTP after the refusal.
  ASSERT_TRUE(c.SendRaw("GET /ws/plain HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string answer;
  ASSERT_TRUE(c.ReadUntil("no upgrade", &answer, seconds(5)));
  EXPECT_EQ(answer.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << answer;
  WsClient d;
  ASSERT_TRUE(d.Handshake(gw_.port(), "/ws/plain"));
  // The node saw the upgrade and answered 200 anyway.
  EXPECT_NE(LastHead().find("\r\nUpgrade: websocket\r\n"), std::string::npos);
  EXPECT_EQ(d.status(), 200) << d.response_head();
  EXPECT_EQ(d.response_body(), "no upgrade");
  EXPECT_EQ(d.Header("connection"), "") << d.response_head();  // keep-alive, HTTP/1.1
  HttpConnection again(gw_.port());
  HttpResponse r = again.RoundTrip("GET /ws/plain HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(r.status, 200) << r.DebugString();
}

// The log phase runs when the tunnel ends: status 101, the bytes sent to the client counted.
TEST_F(WebsocketTest, AccessLogLineAtTheEnd) {
  TempDir dir;
  TurnpikeOptions options;
  options.http_extra = "    enable_access_log: true\n    access_log: " + dir.File("access.log") +
                       "\n    access_log_format: "
                       "'$request|$status|$bytes_sent|$upstream_addr'\n";
  ASSERT_NO_FATAL_FAILURE(Start(options));
  {
    WsClient c;
    ASSERT_TRUE(c.Handshake(gw_.port(), "/ws/logged"));
    ASSERT_NO_FATAL_FAILURE(ExpectSwitched(c));
    ASSERT_NO_FATAL_FAILURE(ExpectEcho(c, WsOpcode::kBinary, std::string(10000, 'x')));
    EXPECT_EQ(ReadFile(dir.File("access.log")), "") << "logged before the tunnel ended";
    ASSERT_TRUE(c.Send(WsOpcode::kText, "close-me"));
    EXPECT_TRUE(c.WaitForClose(seconds(5)));
  }
  std::string line;
  ASSERT_TRUE(PollUntil(
      [&] {
        line = ReadFile(dir.File("access.log"));
        return !line.empty();
      },
      seconds(5)));
  std::string prefix = "GET /ws/logged HTTP/1.1|101|";
  ASSERT_EQ(line.rfind(prefix, 0), 0u) << line;
  uint64_t bytes = std::stoull(line.substr(prefix.size()));
  // The 101 head, the 10,000-byte echo (4-byte header) and the close frame.
  EXPECT_GT(bytes, 10000u + 4 + 4) << line;
  EXPECT_LT(bytes, 10000u + 4 + 4 + 1024) << line;
  EXPECT_NE(line.find("|127.0.0.1:" + std::to_string(server_.port())), std::string::npos) << line;
}

}  // namespace
}  // namespace turnpike::itest
