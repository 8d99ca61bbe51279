// A small websocket (RFC 6455) toolkit for tests: the opening handshake's accept key, frames
// encoded and read on blocking sockets, an echo server and a client.
//
// Only what a proxy test needs: no fragmentation of messages (every frame has FIN), no extensions,
// payloads of any size (7-bit, 16-bit and 64-bit lengths). Everything talks to 127.0.0.1 only.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace turnpike::testing {

enum class WsOpcode : uint8_t {
  kContinuation = 0x0,
  kText = 0x1,
  kBinary = 0x2,
  kClose = 0x8,
  kPing = 0x9,
  kPong = 0xA,
};

struct WsFrame {
  WsOpcode opcode = WsOpcode::kText;
  std::string payload;
};

// Sec-WebSocket-Accept for `key`: base64(SHA-1(key + the RFC's GUID)).
std::string WsAcceptKey(std::string_view key);

// One frame with FIN set; masked (as a client must) when `mask` is set.
std::string EncodeWsFrame(WsOpcode opcode, std::string_view payload, bool mask);

// Reads one frame (masked or not) from the blocking socket `fd` within `timeout`, taking bytes from
// `pending` first and leaving what follows the frame there. nullopt on EOF, error, timeout or a
// malformed frame (`error` says which, when not null).
std::optional<WsFrame> ReadWsFrame(int fd, std::string* pending, std::chrono::milliseconds timeout,
                                   std::string* error = nullptr);

// The echo server: accepts on 127.0.0.1 (a free port), one thread per connection. It reads the HTTP
// request head and then:
//   - without "Upgrade: websocket" (or on path /plain) answers "HTTP/1.1 426 Upgrade Required"
//     (/plain: 200) with body "no upgrade" and serves the next request on the connection, as an
//     HTTP server would;
//   - on path /deny answers 403 with body "denied", keep-alive;
//   - else switches: 101 with the accept key (on path /greet followed in the same write by a text
//     frame "hello"), then echoes every data frame unmasked, answers a ping with a pong, and a
//     close frame with a close frame and the end of the connection. Text commands: "close-me"
//     makes it send a close frame and close; "send:<n>" makes it send a binary frame of <n>
//     bytes (WsPattern(n)); "pause:<ms>" makes it stop reading for that long.
// The paths are matched at their end ("/ws/deny" is /deny). Thread-safe accessors; the
// destructor stops every thread.
class WsEchoServer {
 public:
  WsEchoServer();
  ~WsEchoServer();
  WsEchoServer(const WsEchoServer&) = delete;
  WsEchoServer& operator=(const WsEchoServer&) = delete;

  int port() const { return port_; }  // 0 when listening failed
  // The request heads received, in order.
  std::vector<std::string> heads() const;
  // Connections the server is done with (the peer closed, or it closed them itself).
  int ended_connections() const { return ended_.load(); }
  int connections() const { return connections_.load(); }

 private:
  void AcceptLoop();
  void Serve(int fd);

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::atomic<int> ended_{0};
  std::thread accept_thread_;
  mutable std::mutex mu_;
  std::vector<std::thread> threads_;
  std::vector<int> fds_;
  std::vector<std::string> heads_;
};

// The payload "send:<n>" asks for, and what a test sends: byte i = (i + seed) % 251.
std::string WsPattern(size_t n, int seed = 0);

// A websocket client on a blocking socket.
class WsClient {
 public:
  WsClient() = default;
  ~WsClient();
  WsClient(const WsClient&) = delete;
  WsClient& operator=(const WsClient&) = delete;

  // Connects to 127.0.0.1:`port` and sends the opening handshake for `path` (plus `extra_headers`,
  // each "Name: value\r\n"); reads the response head (and, for a response that is not a 101, its
  // Content-Length body). False when no head came.
  bool Handshake(int port, std::string_view path, std::string_view extra_headers = "");
  int status() const { return status_; }
  const std::string& response_head() const { return head_; }
  const std::string& response_body() const { return body_; }
  // The value of response header `name` (case-insensitive), or "".
  std::string Header(std::string_view name) const;
  // The key sent (to check Sec-WebSocket-Accept).
  const std::string& key() const { return key_; }

  bool Send(WsOpcode opcode, std::string_view payload);
  // Writes raw bytes (an HTTP request on a connection that was not switched).
  bool SendRaw(std::string_view bytes);
  std::optional<WsFrame> Read(std::chrono::milliseconds timeout = std::chrono::seconds(5),
                              std::string* error = nullptr);
  // Reads through `marker` (bytes left over from the handshake first) into `out`. False on EOF or
  // timeout.
  bool ReadUntil(std::string_view marker, std::string* out, std::chrono::milliseconds timeout);
  // True when the peer closes the connection within `timeout` (bytes before the EOF are discarded).
  bool WaitForClose(std::chrono::milliseconds timeout);
  // shutdown(SHUT_WR): the gateway reads EOF.
  void ShutdownWrite();
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  int status_ = 0;
  std::string key_;
  std::string head_;
  std::string body_;
  std::string pending_;  // bytes read past the response head (early frames)
};

}  // namespace turnpike::testing
