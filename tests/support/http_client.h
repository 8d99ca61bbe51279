// A raw HTTP/1.1 client for tests: sends arbitrary bytes to 127.0.0.1:port and parses what
// comes back exactly as a user agent would see it, including 1xx interim responses.
//
// Every read and write is bounded by an inactivity timeout so a broken proxy fails the test
// instead of hanging it. Not thread-safe; one HttpConnection per thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace turnpike::testing {

using Headers = std::vector<std::pair<std::string, std::string>>;

inline constexpr std::chrono::milliseconds kDefaultIoTimeout{10000};

struct HttpResponse {
  std::string error;    // set when no complete response could be read (status stays 0)
  std::string version;  // "HTTP/1.1"
  int status = 0;
  std::string reason;
  Headers headers;           // in received order
  std::string body;          // decoded body (empty when a body sink was used)
  uint64_t body_length = 0;  // decoded body bytes received
  bool chunked = false;      // body used chunked transfer coding
  bool until_close = false;  // body was delimited by the server closing the connection

  bool ok() const { return error.empty(); }
  // First value of header `name` (case-insensitive), or nullopt.
  std::optional<std::string> Header(std::string_view name) const;
  bool HasHeader(std::string_view name) const { return Header(name).has_value(); }
  std::vector<std::string> HeaderValues(std::string_view name) const;
  // True if the server announced or caused the end of the connection after this response.
  bool ConnectionClosing() const;
  // Status line, headers and the start of the body, for failure messages.
  std::string DebugString() const;
};

struct ReadOptions {
  bool head = false;  // the request was HEAD: the response has no body whatever it says
  // When set, body bytes are handed here as they arrive instead of being stored in `body`.
  std::function<void(std::string_view)> body_sink;

  static ReadOptions Head() {
    ReadOptions o;
    o.head = true;
    return o;
  }
};

class HttpConnection {
 public:
  HttpConnection() = default;
  // Connects right away; check connected() / error().
  explicit HttpConnection(int port, std::chrono::milliseconds timeout = kDefaultIoTimeout);
  ~HttpConnection();
  HttpConnection(HttpConnection&& other) noexcept;
  HttpConnection& operator=(HttpConnection&& other) noexcept;
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  bool Connect(int port);
  bool connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  const std::string& error() const { return error_; }
  void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

  // Writes all of `bytes`; false (and error()) on failure or when the peer stops reading for
  // longer than the timeout.
  bool Send(std::string_view bytes);

  // Reads exactly one response; a 1xx interim response is returned on its own (call again
  // for the final one).
  HttpResponse ReadResponse(const ReadOptions& options = {});

  // Send() + ReadResponse(), skipping 1xx interim responses.
  HttpResponse RoundTrip(std::string_view request, const ReadOptions& options = {});

  // True if the peer closes the connection (EOF or reset) within `timeout` without sending
  // anything else; false if data arrives or it stays open.
  bool WaitForClose(std::chrono::milliseconds timeout);

  void ShutdownWrite();
  void Close();

 private:
  // Ensures at least one unread byte is buffered. 1 = ok, 0 = EOF, -1 = error (error_ set).
  int Fill();
  enum class Line { kOk, kEof, kError };
  Line ReadLine(std::string* line, size_t max);
  bool ReadBody(uint64_t n, HttpResponse* r, const ReadOptions& options);
  bool ReadChunkedBody(HttpResponse* r, const ReadOptions& options);
  void Deliver(std::string_view data, HttpResponse* r, const ReadOptions& options);

  int fd_ = -1;
  std::chrono::milliseconds timeout_ = kDefaultIoTimeout;
  std::string error_;
  std::vector<char> buf_;
  size_t begin_ = 0;
  size_t end_ = 0;
};

// A request as a user agent would write it. Serialize() adds `Host: 127.0.0.1:<port>` unless
// a Host header is given, and `Content-Length` when there is a body and neither
// Content-Length nor Transfer-Encoding is given.
struct HttpRequest {
  std::string method = "GET";
  std::string target = "/";
  Headers headers;
  std::string body;

  std::string Serialize(int port) const;
};

// Encodes `body` in chunked transfer coding, cutting it into pieces of `chunk_size` bytes.
std::string ChunkedEncode(std::string_view body, size_t chunk_size);

// One request on a fresh connection (with `Connection: close` unless a Connection header is
// given); the final response, or one with `error` set.
HttpResponse Fetch(int port, const HttpRequest& request, const ReadOptions& options = {});

// GET `target` on a fresh connection.
HttpResponse Get(int port, std::string_view target, const Headers& headers = {});

}  // namespace turnpike::testing
