// turnpike_test_backend: a small HTTP/1.1 origin server used by the integration tests and as
// the demo backend of scripts/run.
//
// Usage: turnpike_test_backend [--listen 127.0.0.1:PORT] [--id NAME]
//   PORT 0 (the default) picks a free port. Once listening, prints exactly "LISTENING <port>\n"
//   on stdout. SIGTERM / SIGINT end the process with exit code 0.
//
// One blocking thread per connection. Keep-alive (HTTP/1.1 default; `Connection: close` and
// HTTP/1.0 honoured), pipelining, request bodies with Content-Length or chunked encoding are
// consumed streaming in constant memory (1 GiB uploads are fine).
//
// Every response carries `X-Backend-Id: NAME`. Endpoints (HEAD works on all of them and sends
// the headers only):
//   /hello          200 "hello world\n"
//   /echo, /echo/*  200 JSON describing the request: method, uri (raw target), version,
//                   headers (ordered [name, value] pairs as received), body_length,
//                   body_fnv1a (16 hex digits, 64-bit FNV-1a), body (first 1024 bytes; bytes
//                   >= 0x80 are written as \u00XX), chunked, conn.
//   /status/<code>  that status, body "status <code>\n" (none for 204 and 304)
//   /delay/<ms>     200 "delayed <ms>\n" after ms milliseconds
//   /delay-on/<id>/<ms>  the same on the backend named <id>; at once ("delayed 0") on others
//   /bytes/<n>      n bytes, byte i = 'a' + i % 26, with Content-Length;
//                   ?chunked=1 -> chunked in 16 KiB chunks; ?close=1 -> ended by closing
//   /close          200 with `Connection: close`, then closes
//   /reset          closes the socket with RST (SO_LINGER 0) without responding
//   /hang           never responds; returns when the client closes
//   /conn           body = this connection's sequence number (1, 2, ...)
//   /inflight       body = number of other requests currently being handled (a request counts
//                   from its parsed head until its response head is written)
//   /health         the status set by /health/set (200 until then), body "health <code>\n";
//                   counts its requests
//   /health/set/<code>  sets /health's status (health check tests take a node down and up)
//   /health/hits    body = the number of /health requests so far
//   anything else   404
//
// Deliberately no dependencies beyond the C++ standard library and POSIX.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace {

constexpr size_t kReadBufferSize = 256 * 1024;
constexpr size_t kMaxRequestLine = 1024 * 1024;
constexpr size_t kMaxHeaderBytes = 4 * 1024 * 1024;
constexpr size_t kEchoBodyPrefix = 1024;
constexpr size_t kChunkSize = 16 * 1024;
constexpr uint64_t kFnvOffset = 14695981039346656037ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

std::string g_backend_id = "default";       // written once in main before any thread starts
std::atomic<uint64_t> g_connection_seq{0};  // last connection sequence number handed out
std::atomic<int> g_inflight{0};             // see InflightCount
std::atomic<int> g_health_status{200};      // /health's status (/health/set)
std::atomic<uint64_t> g_health_hits{0};     // /health requests so far

// ------------------------------------------------------------------------- small helpers

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// True if the comma-separated list `value` contains `token` (case-insensitive).
bool HasToken(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    std::string_view item = Trim(value.substr(0, comma));
    if (EqualsIgnoreCase(item, token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

std::optional<uint64_t> ParseDecimal(std::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

std::optional<uint64_t> ParseHex(std::string_view s) {
  if (s.empty() || s.size() > 15) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (Lower(c) >= 'a' && Lower(c) <= 'f') {
      d = Lower(c) - 'a' + 10;
    } else {
      return std::nullopt;
    }
    v = v * 16 + static_cast<uint64_t>(d);
  }
  return v;
}

const char* Reason(int status) {
  static constexpr std::pair<int, const char*> kReasons[] = {
      {100, "Continue"},
      {200, "OK"},
      {201, "Created"},
      {202, "Accepted"},
      {204, "No Content"},
      {206, "Partial Content"},
      {301, "Moved Permanently"},
      {302, "Found"},
      {304, "Not Modified"},
      {400, "Bad Request"},
      {401, "Unauthorized"},
      {403, "Forbidden"},
      {404, "Not Found"},
      {405, "Method Not Allowed"},
      {408, "Request Timeout"},
      {413, "Payload Too Large"},
      {429, "Too Many Requests"},
      {500, "Internal Server Error"},
      {501, "Not Implemented"},
      {502, "Bad Gateway"},
      {503, "Service Unavailable"},
      {504, "Gateway Timeout"},
  };
  for (const auto& [code, reason] : kReasons) {
    if (code == status) return reason;
  }
  return "Unknown";
}

// The /bytes pattern starting at any offset: Pattern() + (offset % 26) is valid for
// kPatternSpan bytes.
constexpr size_t kPatternSpan = 256 * 1024;
const char* Pattern() {
  static const std::vector<char> pattern = [] {
    std::vector<char> p(kPatternSpan + 26);
    for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<char>('a' + i % 26);
    return p;
  }();
  return pattern.data();
}

// ------------------------------------------------------------------------- socket I/O

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool WriteAll(int fd, std::string_view s) { return WriteAll(fd, s.data(), s.size()); }

bool WritevAll(int fd, iovec* iov, int count) {
  while (count > 0) {
    ssize_t n = ::writev(fd, iov, count);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    auto left = static_cast<size_t>(n);
    while (count > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --count;
    }
    if (count > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return true;
}

// Buffered reader over a blocking socket; leftover bytes stay buffered for the next
// (pipelined) request.
class Reader {
 public:
  explicit Reader(int fd) : fd_(fd), buf_(kReadBufferSize) {}

  enum class Result { kOk, kEof, kError, kTooLong };

  // Reads a line terminated by LF (a preceding CR is dropped). kEof only when the connection
  // ended before any byte of the line.
  Result ReadLine(std::string* line, size_t max) {
    line->clear();
    while (true) {
      const char* begin = buf_.data() + begin_;
      const char* nl = static_cast<const char*>(std::memchr(begin, '\n', end_ - begin_));
      size_t take = nl ? static_cast<size_t>(nl - begin) : end_ - begin_;
      if (line->size() + take > max) return Result::kTooLong;
      line->append(begin, take);
      begin_ += take;
      if (nl) {
        ++begin_;
        if (!line->empty() && line->back() == '\r') line->pop_back();
        return Result::kOk;
      }
      int got = Fill();
      if (got == 0) return line->empty() ? Result::kEof : Result::kError;
      if (got < 0) return Result::kError;
    }
  }

  // Returns up to `max` buffered bytes, reading from the socket if none are buffered. Empty
  // on EOF or error. Call Consume() with the number of bytes used.
  std::string_view Peek(size_t max) {
    if (begin_ == end_ && Fill() <= 0) return {};
    return std::string_view(buf_.data() + begin_, std::min(max, end_ - begin_));
  }
  void Consume(size_t n) { begin_ += n; }

 private:
  // Returns bytes read (> 0), 0 on EOF, -1 on error.
  int Fill() {
    if (begin_ == end_) begin_ = end_ = 0;
    if (end_ == buf_.size()) {
      std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    while (true) {
      ssize_t n = ::recv(fd_, buf_.data() + end_, buf_.size() - end_, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return n == 0 ? 0 : -1;
      end_ += static_cast<size_t>(n);
      return static_cast<int>(n);
    }
  }

  int fd_;
  std::vector<char> buf_;
  size_t begin_ = 0;
  size_t end_ = 0;
};

// ------------------------------------------------------------------------- requests

struct Request {
  std::string method;
  std::string target;   // raw request target
  std::string version;  // "1.1" or "1.0"
  std::vector<std::pair<std::string, std::string>> headers;
  std::optional<uint64_t> content_length;
  bool chunked = false;
  bool keep_alive = true;
  bool expect_continue = false;
  bool head = false;

  std::string_view Path() const {
    std::string_view t = target;
    if (t.rfind("http://", 0) == 0 || t.rfind("https://", 0) == 0) {  // absolute-form
      size_t slash = t.find('/', t.find("//") + 2);
      t = slash == std::string_view::npos ? std::string_view("/") : t.substr(slash);
    }
    return t.substr(0, t.find('?'));
  }

  // Value of query parameter `name` ("" when absent or valueless).
  std::string_view Query(std::string_view name) const {
    std::string_view t = target;
    size_t q = t.find('?');
    if (q == std::string_view::npos) return {};
    t.remove_prefix(q + 1);
    while (!t.empty()) {
      size_t amp = t.find('&');
      std::string_view pair = t.substr(0, amp);
      size_t eq = pair.find('=');
      if (pair.substr(0, eq) == name) {
        return eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
      }
      if (amp == std::string_view::npos) break;
      t.remove_prefix(amp + 1);
    }
    return {};
  }
};

enum class ParseResult { kOk, kEof, kBad };

ParseResult ReadRequestHead(Reader& reader, Request* req) {
  std::string line;
  // RFC 9112 2.2: ignore empty lines received before the request line.
  for (int blank = 0;; ++blank) {
    Reader::Result r = reader.ReadLine(&line, kMaxRequestLine);
    if (r == Reader::Result::kEof) return ParseResult::kEof;
    if (r != Reader::Result::kOk) return ParseResult::kBad;
    if (!line.empty()) break;
    if (blank > 8) return ParseResult::kBad;
  }
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string::npos ? std::string::npos : line.find(' ', sp1 + 1);
  if (sp1 == 0 || sp2 == std::string::npos || sp2 == sp1 + 1 ||
      line.find(' ', sp2 + 1) != std::string::npos) {
    return ParseResult::kBad;
  }
  req->method = line.substr(0, sp1);
  req->target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = std::string_view(line).substr(sp2 + 1);
  if (version == "HTTP/1.1") {
    req->version = "1.1";
  } else if (version == "HTTP/1.0") {
    req->version = "1.0";
  } else {
    return ParseResult::kBad;
  }
  req->head = req->method == "HEAD";

  size_t total = 0;
  std::optional<std::string> transfer_encoding;
  std::string connection;
  while (true) {
    Reader::Result r = reader.ReadLine(&line, kMaxHeaderBytes);
    if (r != Reader::Result::kOk) return ParseResult::kBad;
    if (line.empty()) break;
    total += line.size() + 2;
    if (total > kMaxHeaderBytes) return ParseResult::kBad;
    if (line[0] == ' ' || line[0] == '\t') return ParseResult::kBad;  // obsolete folding
    size_t colon = line.find(':');
    if (colon == std::string::npos || colon == 0) return ParseResult::kBad;
    std::string name = line.substr(0, colon);
    if (name.find_first_of(" \t") != std::string::npos) return ParseResult::kBad;
    std::string value(Trim(std::string_view(line).substr(colon + 1)));
    if (EqualsIgnoreCase(name, "Content-Length")) {
      std::optional<uint64_t> n = ParseDecimal(value);
      if (!n || (req->content_length && *req->content_length != *n)) return ParseResult::kBad;
      req->content_length = n;
    } else if (EqualsIgnoreCase(name, "Transfer-Encoding")) {
      transfer_encoding = transfer_encoding ? *transfer_encoding + ", " + value : value;
    } else if (EqualsIgnoreCase(name, "Connection")) {
      connection += connection.empty() ? value : ", " + value;
    } else if (EqualsIgnoreCase(name, "Expect")) {
      req->expect_continue = EqualsIgnoreCase(value, "100-continue");
    }
    req->headers.emplace_back(std::move(name), std::move(value));
  }
  if (transfer_encoding) {
    std::string_view te = *transfer_encoding;
    size_t comma = te.rfind(',');
    std::string_view last = Trim(comma == std::string_view::npos ? te : te.substr(comma + 1));
    if (!EqualsIgnoreCase(last, "chunked")) return ParseResult::kBad;
    req->chunked = true;
    if (req->content_length) {
      // Both framings present (RFC 9112 6.3): chunked wins, and the connection must close.
      req->content_length.reset();
      connection += ", close";
    }
  }
  if (req->version == "1.1") {
    req->keep_alive = !HasToken(connection, "close");
  } else {
    req->keep_alive = HasToken(connection, "keep-alive") && !HasToken(connection, "close");
  }
  return ParseResult::kOk;
}

// Streaming digest of a request body.
struct BodyStats {
  uint64_t length = 0;
  uint64_t fnv = kFnvOffset;
  std::string prefix;  // first kEchoBodyPrefix bytes

  void Absorb(std::string_view data) {
    if (prefix.size() < kEchoBodyPrefix) {
      prefix.append(data.substr(0, kEchoBodyPrefix - prefix.size()));
    }
    uint64_t h = fnv;
    for (unsigned char c : data) {
      h ^= c;
      h *= kFnvPrime;
    }
    fnv = h;
    length += data.size();
  }
};

bool ReadFixed(Reader& reader, uint64_t n, BodyStats* stats) {
  while (n > 0) {
    std::string_view chunk = reader.Peek(static_cast<size_t>(std::min<uint64_t>(n, SIZE_MAX)));
    if (chunk.empty()) return false;
    stats->Absorb(chunk);
    reader.Consume(chunk.size());
    n -= chunk.size();
  }
  return true;
}

bool ReadBody(Reader& reader, const Request& req, BodyStats* stats) {
  if (!req.chunked) return ReadFixed(reader, req.content_length.value_or(0), stats);
  std::string line;
  while (true) {
    if (reader.ReadLine(&line, 4096) != Reader::Result::kOk) return false;
    std::string_view size_text = Trim(std::string_view(line).substr(0, line.find(';')));
    std::optional<uint64_t> size = ParseHex(size_text);
    if (!size) return false;
    if (*size == 0) break;
    if (!ReadFixed(reader, *size, stats)) return false;
    if (reader.ReadLine(&line, 2) != Reader::Result::kOk || !line.empty()) return false;
  }
  // Trailer section, ended by an empty line.
  while (true) {
    if (reader.ReadLine(&line, kMaxHeaderBytes) != Reader::Result::kOk) return false;
    if (line.empty()) return true;
  }
}

// ------------------------------------------------------------------------- responses

// Counts one request for /inflight, from its parsed head until its response head is about to
// be written. Not until the write returns: by then the client may have read the response and
// asked /inflight, and must not see this request still counted.
class InflightCount {
 public:
  InflightCount() { g_inflight.fetch_add(1); }
  ~InflightCount() { Done(); }
  InflightCount(const InflightCount&) = delete;
  InflightCount& operator=(const InflightCount&) = delete;
  void Done() {
    if (counted_) g_inflight.fetch_sub(1);
    counted_ = false;
  }

 private:
  bool counted_ = true;
};

class Responder {
 public:
  // `inflight` (may be null) is marked done when the response head is built.
  Responder(int fd, const Request& req, InflightCount* inflight = nullptr)
      : fd_(fd), req_(req), keep_alive_(req.keep_alive), inflight_(inflight) {}

  bool keep_alive() const { return keep_alive_; }
  void set_close() { keep_alive_ = false; }

  // Status line + common headers + `extra` (each line ending in CRLF) + blank line.
  std::string Head(int status, const std::string& extra) const {
    if (inflight_ != nullptr) inflight_->Done();
    std::string h = "HTTP/1.1 " + std::to_string(status) + " " + Reason(status) + "\r\n";
    h += "Server: turnpike-test-backend\r\n";
    h += "X-Backend-Id: " + g_backend_id + "\r\n";
    if (!keep_alive_) {
      h += "Connection: close\r\n";
    } else if (req_.version == "1.0") {
      h += "Connection: keep-alive\r\n";
    }
    h += extra;
    h += "\r\n";
    return h;
  }

  // A complete response with a Content-Length body (body omitted for HEAD, 204 and 304).
  bool Send(int status, std::string_view content_type, std::string_view body) {
    bool no_body = status == 204 || status == 304;
    std::string extra;
    if (!no_body) {
      extra = "Content-Type: " + std::string(content_type) + "\r\n";
      extra += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    }
    std::string out = Head(status, extra);
    if (!req_.head && !no_body) out.append(body);
    return WriteAll(fd_, out);
  }

 private:
  int fd_;
  const Request& req_;
  bool keep_alive_;
  InflightCount* inflight_;
};

void AppendJsonString(std::string* out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else if (c < 0x20 || c >= 0x7f) {
      // Bytes >= 0x80 are escaped as \u00XX (Latin-1) so the document is always ASCII.
      out->append("\\u00");
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 15]);
    } else {
      out->push_back(static_cast<char>(c));
    }
  }
  out->push_back('"');
}

std::string EchoJson(const Request& req, const BodyStats& body, uint64_t conn) {
  std::string j = "{\"method\":";
  AppendJsonString(&j, req.method);
  j += ",\"uri\":";
  AppendJsonString(&j, req.target);
  j += ",\"version\":";
  AppendJsonString(&j, req.version);
  j += ",\"headers\":[";
  for (size_t i = 0; i < req.headers.size(); ++i) {
    if (i > 0) j += ',';
    j += '[';
    AppendJsonString(&j, req.headers[i].first);
    j += ',';
    AppendJsonString(&j, req.headers[i].second);
    j += ']';
  }
  char fnv[17];
  std::snprintf(fnv, sizeof(fnv), "%016llx", static_cast<unsigned long long>(body.fnv));
  j += "],\"body_length\":" + std::to_string(body.length);
  j += ",\"body_fnv1a\":\"" + std::string(fnv) + "\"";
  j += ",\"body\":";
  AppendJsonString(&j, body.prefix);
  j += ",\"chunked\":";
  j += req.chunked ? "true" : "false";
  j += ",\"conn\":" + std::to_string(conn) + "}\n";
  return j;
}

bool SendBytes(int fd, const Request& req, Responder& resp, uint64_t n) {
  bool chunked = req.Query("chunked") == "1";
  bool until_close = !chunked && req.Query("close") == "1";
  std::string extra = "Content-Type: application/octet-stream\r\n";
  if (until_close) {
    resp.set_close();
  } else if (chunked) {
    extra += "Transfer-Encoding: chunked\r\n";
  } else {
    extra += "Content-Length: " + std::to_string(n) + "\r\n";
  }
  if (!WriteAll(fd, resp.Head(200, extra))) return false;
  if (req.head) return true;
  const char* pattern = Pattern();
  uint64_t offset = 0;
  while (offset < n) {
    size_t len =
        static_cast<size_t>(std::min<uint64_t>(n - offset, chunked ? kChunkSize : kPatternSpan));
    const char* data = pattern + offset % 26;
    if (chunked) {
      char size_line[32];
      int size_len = std::snprintf(size_line, sizeof(size_line), "%zx\r\n", len);
      char crlf[] = "\r\n";
      iovec iov[3] = {
          {size_line, static_cast<size_t>(size_len)}, {const_cast<char*>(data), len}, {crlf, 2}};
      if (!WritevAll(fd, iov, 3)) return false;
    } else if (!WriteAll(fd, data, len)) {
      return false;
    }
    offset += len;
  }
  return !chunked || WriteAll(fd, "0\r\n\r\n");
}

// Waits until the peer closes (or resets) the connection, discarding anything it sends.
void WaitForPeerClose(int fd) {
  char sink[4096];
  while (true) {
    ssize_t n = ::recv(fd, sink, sizeof(sink), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
  }
}

// Half-closes, then drains briefly so unread pipelined input does not turn our close into an
// RST that could destroy the response still in flight.
void LingeringClose(int fd) {
  ::shutdown(fd, SHUT_WR);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  char sink[4096];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    ssize_t n = ::recv(fd, sink, sizeof(sink), 0);
    if (n <= 0) break;
  }
  ::close(fd);
}

void ResetClose(int fd) {
  linger l{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  ::close(fd);
}

enum class After { kContinue, kClose, kAlreadyClosed };

// Handles one request whose head has been parsed.
After HandleRequest(int fd, Reader& reader, Request& req, uint64_t conn, InflightCount& inflight) {
  std::string_view path = req.Path();
  if (path == "/reset") {
    ResetClose(fd);
    return After::kAlreadyClosed;
  }
  if (path == "/hang") {
    WaitForPeerClose(fd);
    return After::kClose;
  }

  bool has_body = req.chunked || req.content_length.value_or(0) > 0;
  if (has_body && req.expect_continue && req.version == "1.1") {
    if (!WriteAll(fd, "HTTP/1.1 100 Continue\r\n\r\n")) return After::kClose;
  }
  BodyStats body;
  if (!ReadBody(reader, req, &body)) return After::kClose;

  Responder resp(fd, req, &inflight);
  bool ok = true;
  if (path == "/hello") {
    ok = resp.Send(200, "text/plain", "hello world\n");
  } else if (path == "/echo" || path.rfind("/echo/", 0) == 0) {
    ok = resp.Send(200, "application/json", EchoJson(req, body, conn));
  } else if (path.rfind("/status/", 0) == 0) {
    std::optional<uint64_t> code = ParseDecimal(path.substr(8));
    if (code && *code >= 200 && *code <= 599) {
      int status = static_cast<int>(*code);
      ok = resp.Send(status, "text/plain", "status " + std::to_string(status) + "\n");
    } else {
      ok = resp.Send(400, "text/plain", "bad status code\n");
    }
  } else if (path.rfind("/delay/", 0) == 0) {
    std::optional<uint64_t> ms = ParseDecimal(path.substr(7));
    if (ms && *ms <= 600000) {
      std::this_thread::sleep_for(std::chrono::milliseconds(*ms));
      ok = resp.Send(200, "text/plain", "delayed " + std::to_string(*ms) + "\n");
    } else {
      ok = resp.Send(400, "text/plain", "bad delay\n");
    }
  } else if (path.rfind("/delay-on/", 0) == 0) {
    // /delay-on/<id>/<ms>: slow on the backend named <id> only (balancer tests).
    std::string_view rest = path.substr(10);
    size_t slash = rest.find('/');
    std::optional<uint64_t> ms =
        slash == std::string_view::npos ? std::nullopt : ParseDecimal(rest.substr(slash + 1));
    if (ms && *ms <= 600000) {
      uint64_t wait = rest.substr(0, slash) == g_backend_id ? *ms : 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(wait));
      ok = resp.Send(200, "text/plain", "delayed " + std::to_string(wait) + "\n");
    } else {
      ok = resp.Send(400, "text/plain", "bad delay\n");
    }
  } else if (path.rfind("/bytes/", 0) == 0) {
    std::optional<uint64_t> n = ParseDecimal(path.substr(7));
    if (n) {
      ok = SendBytes(fd, req, resp, *n);
    } else {
      ok = resp.Send(400, "text/plain", "bad length\n");
    }
  } else if (path == "/close") {
    resp.set_close();
    ok = resp.Send(200, "text/plain", "closing\n");
  } else if (path == "/conn") {
    ok = resp.Send(200, "text/plain", std::to_string(conn));
  } else if (path == "/health") {
    g_health_hits.fetch_add(1);
    const int status = g_health_status.load();
    ok = resp.Send(status, "text/plain", "health " + std::to_string(status) + "\n");
  } else if (path.rfind("/health/set/", 0) == 0) {
    std::optional<uint64_t> code = ParseDecimal(path.substr(12));
    if (code && *code >= 200 && *code <= 599) {
      g_health_status.store(static_cast<int>(*code));
      ok = resp.Send(200, "text/plain", "health set\n");
    } else {
      ok = resp.Send(400, "text/plain", "bad status code\n");
    }
  } else if (path == "/health/hits") {
    ok = resp.Send(200, "text/plain", std::to_string(g_health_hits.load()));
  } else if (path == "/inflight") {
    ok = resp.Send(200, "text/plain", std::to_string(g_inflight.load() - 1));
  } else {
    ok = resp.Send(404, "text/plain", "not found\n");
  }
  return ok && resp.keep_alive() ? After::kContinue : After::kClose;
}

void ServeConnection(int fd, uint64_t conn) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  Reader reader(fd);
  while (true) {
    Request req;
    ParseResult parsed = ReadRequestHead(reader, &req);
    if (parsed == ParseResult::kEof) break;
    if (parsed == ParseResult::kBad) {
      Responder resp(fd, req);
      resp.set_close();
      req.head = false;
      resp.Send(400, "text/plain", "bad request\n");
      break;
    }
    After after;
    {
      InflightCount inflight;
      after = HandleRequest(fd, reader, req, conn, inflight);
    }
    if (after == After::kAlreadyClosed) return;
    if (after == After::kClose) break;
  }
  LingeringClose(fd);
}

// ------------------------------------------------------------------------- main

void Usage() {
  std::fprintf(stderr, "usage: turnpike_test_backend [--listen 127.0.0.1:PORT] [--id NAME]\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string listen = "127.0.0.1:0";
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if ((arg == "--listen" || arg == "--id") && i + 1 < argc) {
      (arg == "--listen" ? listen : g_backend_id) = argv[++i];
    } else if (arg.rfind("--listen=", 0) == 0) {
      listen = std::string(arg.substr(9));
    } else if (arg.rfind("--id=", 0) == 0) {
      g_backend_id = std::string(arg.substr(5));
    } else {
      Usage();
      return 2;
    }
  }
  size_t colon = listen.rfind(':');
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  std::optional<uint64_t> port =
      colon == std::string::npos ? std::nullopt : ParseDecimal(listen.substr(colon + 1));
  if (!port || *port > 65535 ||
      ::inet_pton(AF_INET, listen.substr(0, colon).c_str(), &addr.sin_addr) != 1) {
    std::fprintf(stderr, "turnpike_test_backend: bad --listen '%s' (want IPv4:PORT)\n",
                 listen.c_str());
    return 2;
  }
  addr.sin_port = htons(static_cast<uint16_t>(*port));

  // Signals are taken synchronously by one thread; every other thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (lfd < 0 || ::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(lfd, 1024) != 0) {
    std::fprintf(stderr, "turnpike_test_backend: cannot listen on %s: %s\n", listen.c_str(),
                 std::strerror(errno));
    return 1;
  }
  socklen_t len = sizeof(addr);
  ::getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len);
  Pattern();  // build before serving so connection threads never race on it

  std::thread([stop_signals] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    std::fflush(stdout);
    std::_Exit(0);
  }).detach();

  std::printf("LISTENING %d\n", ntohs(addr.sin_port));
  std::fflush(stdout);

  while (true) {
    int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE ||
          errno == ENOBUFS || errno == ENOMEM) {
        if (errno != EINTR && errno != ECONNABORTED) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));  // resource pressure
        }
        continue;
      }
      std::fprintf(stderr, "turnpike_test_backend: accept: %s\n", std::strerror(errno));
      return 1;
    }
    uint64_t conn = g_connection_seq.fetch_add(1) + 1;
    try {
      std::thread(ServeConnection, fd, conn).detach();
    } catch (const std::system_error&) {
      ::close(fd);  // out of threads: drop this connection, keep serving
    }
  }
}
