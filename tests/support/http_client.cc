#include "support/http_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "support/net.h"

namespace turnpike::testing {
namespace {

constexpr size_t kBufferSize = 256 * 1024;
constexpr size_t kMaxLine = 1024 * 1024;

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool HasToken(std::string_view value, std::string_view token) {
  while (true) {
    size_t comma = value.find(',');
    if (EqualsIgnoreCase(Trim(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) return false;
    value.remove_prefix(comma + 1);
  }
}

bool HasHeaderNamed(const Headers& headers, std::string_view name) {
  for (const auto& [n, v] : headers) {
    if (EqualsIgnoreCase(n, name)) return true;
  }
  return false;
}

}  // namespace

// ------------------------------------------------------------------------- HttpResponse

std::optional<std::string> HttpResponse::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (EqualsIgnoreCase(n, name)) return v;
  }
  return std::nullopt;
}

std::vector<std::string> HttpResponse::HeaderValues(std::string_view name) const {
  std::vector<std::string> values;
  for (const auto& [n, v] : headers) {
    if (EqualsIgnoreCase(n, name)) values.push_back(v);
  }
  return values;
}

bool HttpResponse::ConnectionClosing() const {
  if (until_close) return true;
  for (const std::string& v : HeaderValues("Connection")) {
    if (HasToken(v, "close")) return true;
  }
  return version == "HTTP/1.0";
}

std::string HttpResponse::DebugString() const {
  std::string s;
  if (!error.empty()) s += "[error: " + error + "]\n";
  s += version + " " + std::to_string(status) + " " + reason + "\n";
  for (const auto& [n, v] : headers) s += n + ": " + v + "\n";
  s += "\n" + body.substr(0, 512);
  if (body.size() > 512) s += "...(" + std::to_string(body.size()) + " bytes)";
  return s;
}

// ------------------------------------------------------------------------- HttpConnection

HttpConnection::HttpConnection(int port, std::chrono::milliseconds timeout) : timeout_(timeout) {
  Connect(port);
}

HttpConnection::~HttpConnection() { Close(); }

HttpConnection::HttpConnection(HttpConnection&& other) noexcept { *this = std::move(other); }

HttpConnection& HttpConnection::operator=(HttpConnection&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    timeout_ = other.timeout_;
    error_ = std::move(other.error_);
    buf_ = std::move(other.buf_);
    begin_ = std::exchange(other.begin_, 0);
    end_ = std::exchange(other.end_, 0);
  }
  return *this;
}

bool HttpConnection::Connect(int port) {
  Close();
  error_.clear();
  fd_ = ConnectLoopback(port, timeout_, &error_);
  if (fd_ < 0) error_ = "connect to 127.0.0.1:" + std::to_string(port) + ": " + error_;
  return fd_ >= 0;
}

void HttpConnection::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  begin_ = end_ = 0;
}

void HttpConnection::ShutdownWrite() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

bool HttpConnection::Send(std::string_view bytes) {
  if (fd_ < 0) {
    if (error_.empty()) error_ = "not connected";
    return false;
  }
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      int ready = ::poll(&p, 1, static_cast<int>(timeout_.count()));
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        error_ = "send: peer stopped reading for " + std::to_string(timeout_.count()) + " ms";
        return false;
      }
      continue;
    }
    error_ = std::string("send: ") + std::strerror(errno);
    return false;
  }
  return true;
}

int HttpConnection::Fill() {
  if (begin_ < end_) return 1;
  if (fd_ < 0) {
    error_ = "not connected";
    return -1;
  }
  if (buf_.empty()) buf_.resize(kBufferSize);
  begin_ = end_ = 0;
  while (true) {
    pollfd p{fd_, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(timeout_.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      error_ = "timed out after " + std::to_string(timeout_.count()) + " ms waiting for data";
      return -1;
    }
    ssize_t n = ::recv(fd_, buf_.data(), buf_.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return 0;
    if (n < 0) {
      error_ = std::string("recv: ") + std::strerror(errno);
      return -1;
    }
    end_ = static_cast<size_t>(n);
    return 1;
  }
}

HttpConnection::Line HttpConnection::ReadLine(std::string* line, size_t max) {
  line->clear();
  while (true) {
    int f = Fill();
    if (f == 0) {
      if (error_.empty()) error_ = "connection closed by peer";
      if (line->empty()) return Line::kEof;
      error_ = "connection closed in the middle of a line";
      return Line::kError;
    }
    if (f < 0) return Line::kError;
    const char* begin = buf_.data() + begin_;
    const char* nl = static_cast<const char*>(std::memchr(begin, '\n', end_ - begin_));
    size_t take = nl ? static_cast<size_t>(nl - begin) : end_ - begin_;
    line->append(begin, take);
    begin_ += take;
    if (line->size() > max) {
      error_ = "line longer than " + std::to_string(max) + " bytes";
      return Line::kError;
    }
    if (nl) {
      ++begin_;
      if (!line->empty() && line->back() == '\r') line->pop_back();
      return Line::kOk;
    }
  }
}

void HttpConnection::Deliver(std::string_view data, HttpResponse* r, const ReadOptions& options) {
  r->body_length += data.size();
  if (options.body_sink) {
    options.body_sink(data);
  } else {
    r->body.append(data);
  }
}

bool HttpConnection::ReadBody(uint64_t n, HttpResponse* r, const ReadOptions& options) {
  while (n > 0) {
    int f = Fill();
    if (f <= 0) {
      if (f == 0) error_ = "connection closed with " + std::to_string(n) + " body bytes missing";
      return false;
    }
    size_t take = static_cast<size_t>(std::min<uint64_t>(n, end_ - begin_));
    Deliver(std::string_view(buf_.data() + begin_, take), r, options);
    begin_ += take;
    n -= take;
  }
  return true;
}

bool HttpConnection::ReadChunkedBody(HttpResponse* r, const ReadOptions& options) {
  std::string line;
  while (true) {
    if (ReadLine(&line, 4096) != Line::kOk) return false;
    std::string_view size_text = Trim(std::string_view(line).substr(0, line.find(';')));
    uint64_t size = 0;
    if (size_text.empty() || size_text.size() > 15) {
      error_ = "bad chunk size line '" + line + "'";
      return false;
    }
    for (char c : size_text) {
      int d = std::isdigit(static_cast<unsigned char>(c))          ? c - '0'
              : (std::tolower(c) >= 'a' && std::tolower(c) <= 'f') ? std::tolower(c) - 'a' + 10
                                                                   : -1;
      if (d < 0) {
        error_ = "bad chunk size line '" + line + "'";
        return false;
      }
      size = size * 16 + static_cast<uint64_t>(d);
    }
    if (size == 0) break;
    if (!ReadBody(size, r, options)) return false;
    if (ReadLine(&line, 2) != Line::kOk) return false;
    if (!line.empty()) {
      error_ = "chunk not followed by CRLF";
      return false;
    }
  }
  while (true) {  // trailer section
    if (ReadLine(&line, kMaxLine) != Line::kOk) return false;
    if (line.empty()) return true;
  }
}

HttpResponse HttpConnection::ReadResponse(const ReadOptions& options) {
  HttpResponse r;
  error_.clear();
  auto fail = [&](std::string why) {
    r.status = 0;
    r.error = std::move(why);
    return r;
  };
  std::string line;
  Line got = ReadLine(&line, kMaxLine);
  if (got != Line::kOk) return fail(error_.empty() ? "no response" : error_);
  // "HTTP/1.1 200 OK" (the reason phrase may be empty).
  size_t sp1 = line.find(' ');
  if (line.rfind("HTTP/", 0) != 0 || sp1 == std::string::npos || line.size() < sp1 + 4) {
    return fail("bad status line '" + line + "'");
  }
  r.version = line.substr(0, sp1);
  std::string code = line.substr(sp1 + 1, 3);
  if (!std::all_of(code.begin(), code.end(), ::isdigit) ||
      (line.size() > sp1 + 4 && line[sp1 + 4] != ' ')) {
    return fail("bad status line '" + line + "'");
  }
  int status = std::stoi(code);
  r.reason = line.size() > sp1 + 5 ? line.substr(sp1 + 5) : "";

  while (true) {
    if (ReadLine(&line, kMaxLine) != Line::kOk) return fail("reading headers: " + error_);
    if (line.empty()) break;
    size_t colon = line.find(':');
    if (colon == std::string::npos || colon == 0) return fail("bad header line '" + line + "'");
    r.headers.emplace_back(line.substr(0, colon),
                           std::string(Trim(std::string_view(line).substr(colon + 1))));
  }
  r.status = status;

  if (options.head || status / 100 == 1 || status == 204 || status == 304) return r;
  std::optional<std::string> te = r.Header("Transfer-Encoding");
  std::optional<std::string> cl = r.Header("Content-Length");
  bool ok;
  if (te && HasToken(*te, "chunked")) {
    r.chunked = true;
    ok = ReadChunkedBody(&r, options);
  } else if (cl) {
    char* end = nullptr;
    errno = 0;
    unsigned long long n = std::strtoull(cl->c_str(), &end, 10);
    if (cl->empty() || *end != '\0' || errno != 0) return fail("bad Content-Length " + *cl);
    ok = ReadBody(n, &r, options);
  } else {
    r.until_close = true;
    while (true) {
      int f = Fill();
      if (f == 0) break;
      if (f < 0) {
        ok = false;
        break;
      }
      Deliver(std::string_view(buf_.data() + begin_, end_ - begin_), &r, options);
      begin_ = end_;
    }
    ok = error_.empty();
  }
  if (!ok) {
    int partial_status = r.status;
    fail("reading body: " + error_);
    r.reason = "(incomplete " + std::to_string(partial_status) + " response)";
  }
  return r;
}

HttpResponse HttpConnection::RoundTrip(std::string_view request, const ReadOptions& options) {
  if (!Send(request)) {
    HttpResponse r;
    r.error = error_;
    return r;
  }
  while (true) {
    HttpResponse r = ReadResponse(options);
    if (r.status / 100 != 1) return r;
  }
}

bool HttpConnection::WaitForClose(std::chrono::milliseconds timeout) {
  if (fd_ < 0) return true;
  if (begin_ < end_) return false;
  auto saved = timeout_;
  timeout_ = timeout;
  int f = Fill();
  timeout_ = saved;
  if (f == 0) return true;
  return f < 0 && error_.rfind("recv:", 0) == 0;  // reset counts as closed; timeout does not
}

// ------------------------------------------------------------------------- requests

std::string HttpRequest::Serialize(int port) const {
  std::string s = method + " " + target + " HTTP/1.1\r\n";
  if (!HasHeaderNamed(headers, "Host")) s += "Host: 127.0.0.1:" + std::to_string(port) + "\r\n";
  for (const auto& [n, v] : headers) s += n + ": " + v + "\r\n";
  if (!body.empty() && !HasHeaderNamed(headers, "Content-Length") &&
      !HasHeaderNamed(headers, "Transfer-Encoding")) {
    s += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  s += "\r\n";
  s += body;
  return s;
}

std::string ChunkedEncode(std::string_view body, size_t chunk_size) {
  std::string out;
  char size_line[32];
  while (!body.empty()) {
    size_t n = std::min(chunk_size, body.size());
    std::snprintf(size_line, sizeof(size_line), "%zx\r\n", n);
    out += size_line;
    out.append(body.substr(0, n));
    out += "\r\n";
    body.remove_prefix(n);
  }
  out += "0\r\n\r\n";
  return out;
}

HttpResponse Fetch(int port, const HttpRequest& request, const ReadOptions& options) {
  HttpConnection conn(port);
  if (!conn.connected()) {
    HttpResponse r;
    r.error = conn.error();
    return r;
  }
  HttpRequest req = request;
  if (!HasHeaderNamed(req.headers, "Connection")) req.headers.emplace_back("Connection", "close");
  ReadOptions opts = options;
  opts.head = opts.head || req.method == "HEAD";
  return conn.RoundTrip(req.Serialize(port), opts);
}

HttpResponse Get(int port, std::string_view target, const Headers& headers) {
  HttpRequest req;
  req.target = std::string(target);
  req.headers = headers;
  return Fetch(port, req);
}

}  // namespace turnpike::testing
