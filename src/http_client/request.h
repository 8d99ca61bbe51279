// What an HTTP client request and its result are: Origin, Request, Response, Result, Error.
//
// Plain values, owned by the caller. See http_client/client.h for how they are used.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace turnpike::http_client {

// Where a request goes: a resolved socket address (no DNS here). Also the key of the
// keep-alive pool, so two origins are the same when their addresses are.
struct Origin {
  sockaddr_storage addr{};
  socklen_t len = 0;

  // "127.0.0.1" / "::1" and a port; false when `ip` is not an IP literal.
  static bool FromIp(std::string_view ip, int port, Origin* out);
  // "ip:port" or "[v6]:port": the default Host header value.
  std::string HostPort() const;
  bool operator==(const Origin& o) const;
};

struct Request {
  std::string method = "GET";  // a token: A-Z, a-z, 0-9 and !#$%&'*+-.^_`|~
  std::string target = "/";    // origin-form "/path?query", visible ASCII only
  // The Host header; empty: the origin's "ip:port".
  std::string host;
  // Extra header fields, sent as given. Host, Content-Length, Transfer-Encoding and Connection
  // are the client's (a request naming them is invalid).
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // sent with Content-Length (also "0" for an empty POST, PUT or PATCH)

  double connect_timeout = 5;  // seconds to connect (a pooled connection skips it)
  double send_timeout = 10;    // seconds a queued write may make no progress
  // Seconds between two reads while the response is awaited or streams: a blocking query
  // (Consul ?wait=5m) or a watch sets it above the server's own wait.
  double read_timeout = 30;
  // Whole-body mode: a larger body fails with kTooLarge (before reading it when the
  // Content-Length says so). Streaming mode has no limit.
  uint64_t max_body_size = 8 << 20;
  bool keep_alive = true;  // false: "Connection: close", the connection is not pooled
};

// A response head (and, in whole-body mode, its body), as owned copies.
struct Response {
  int status = 0;                                            // 0: no head arrived
  std::vector<std::pair<std::string, std::string>> headers;  // in arrival order
  std::string body;

  // The first field named `name` (case-insensitive), or "" when absent.
  std::string_view Header(std::string_view name) const;
};

enum class Error : uint8_t {
  kNone = 0,
  kInvalidRequest,  // the Request breaks a rule above (nothing was sent)
  kConnectFailed,   // refused, unreachable, ... (Result::uv_error says which)
  kConnectTimeout,
  kSendTimeout,
  kReadTimeout,
  kConnectionClosed,   // closed or reset before the response was complete (uv_error)
  kMalformedResponse,  // broke HTTP/1.1's framing rules (same strictness as the proxy's)
  kTooLarge,           // the head did not fit the read buffer, or the body max_body_size
};

// "connect failed", "read timeout", ...
std::string_view ErrorName(Error e);

struct Result {
  Error error = Error::kNone;
  int uv_error = 0;  // the libuv error behind kConnectFailed / kConnectionClosed, else 0
  // Status and headers once a head arrived (even when an error came later); the body in
  // whole-body mode when error == kNone.
  Response response;

  bool ok() const { return error == Error::kNone; }
};

// Appends the request head (the body follows it unchanged) to `out`. Returns false, appending
// nothing, when the request is invalid. `origin` gives the default Host.
bool EncodeRequestHead(const Request& request, const Origin& origin, std::string* out);

}  // namespace turnpike::http_client
