// RecordingBackend: a raw TCP origin inside the test process that records every byte the
// gateway sends it, for tests that must assert what reached the backend and how it was framed
// (tests/integration/framing_test.cc), and that answers with scripted bytes (well-formed or
// not) to test how the gateway treats upstream responses.
//
// It listens on 127.0.0.1 (a free port), serves each connection on its own thread, and splits
// what arrives into requests with a deliberately small, strict HTTP/1.1 reader: a head ends at
// CRLFCRLF, a body is Content-Length bytes or a chunked body (extensions and trailers
// allowed). Each complete request is handed to the responder, whose bytes are written back
// verbatim. Thread-safe accessors; the destructor stops every thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace turnpike::testing {

struct RecordedRequest {
  int connection = 0;  // 1-based connection sequence number
  std::string head;    // request line and header lines, CRLFCRLF included
  std::string body;    // decoded body
  bool chunked = false;

  std::string RequestLine() const { return head.substr(0, head.find("\r\n")); }
  // Values of header `name` (case-insensitive) in order.
  std::vector<std::string> HeaderValues(const std::string& name) const;
};

struct ScriptedResponse {
  std::string bytes;   // written as they are
  bool close = false;  // close the connection after writing them
};

class RecordingBackend {
 public:
  // Called on a connection thread for every complete request, with the number of requests
  // seen before it on all connections.
  using Responder = std::function<ScriptedResponse(const RecordedRequest&, int index)>;

  // The default responder answers `200` with body "ok <index>".
  explicit RecordingBackend(Responder responder = {});
  ~RecordingBackend();
  RecordingBackend(const RecordingBackend&) = delete;
  RecordingBackend& operator=(const RecordingBackend&) = delete;

  int port() const { return port_; }  // 0 when listening failed

  std::vector<RecordedRequest> requests() const;
  // Every byte received so far, connection after connection.
  std::string raw() const;
  int connections() const { return connections_.load(); }

 private:
  void AcceptLoop();
  void Serve(int fd, int connection);

  Responder responder_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread accept_thread_;
  mutable std::mutex mu_;
  std::vector<std::thread> threads_;
  std::vector<int> fds_;
  std::vector<RecordedRequest> requests_;
  std::vector<std::string> raw_;  // per connection
};

}  // namespace turnpike::testing
