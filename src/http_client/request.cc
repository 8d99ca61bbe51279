#include "http_client/request.h"

#include <arpa/inet.h>

#include <cstring>

#include "base/strings.h"

namespace turnpike::http_client {
namespace {

bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != '\0';
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

// Visible ASCII (no space, no control characters): a request target.
bool IsVisible(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return false;
  }
  return true;
}

// A field value: no CR, LF or NUL (which would end or split the field), no other controls
// than HTAB, and no leading or trailing whitespace.
bool IsFieldValue(std::string_view s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return false;
  }
  return s.empty() ||
         (s.front() != ' ' && s.front() != '\t' && s.back() != ' ' && s.back() != '\t');
}

bool IsReserved(std::string_view name) {
  for (std::string_view r : {"host", "content-length", "transfer-encoding", "connection"}) {
    if (base::EqualsIgnoreCase(name, r)) return true;
  }
  return false;
}

}  // namespace

bool Origin::FromIp(std::string_view ip, int port, Origin* out) {
  if (port <= 0 || port > 65535) return false;
  std::string text(ip);
  *out = Origin{};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out->addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out->addr);
  if (inet_pton(AF_INET, text.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    out->len = sizeof(sockaddr_in);
    return true;
  }
  if (inet_pton(AF_INET6, text.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    out->len = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

std::string Origin::HostPort() const {
  char ip[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &v4->sin_addr, ip, sizeof(ip));
    return std::string(ip) + ":" + std::to_string(ntohs(v4->sin_port));
  }
  const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&addr);
  inet_ntop(AF_INET6, &v6->sin6_addr, ip, sizeof(ip));
  return "[" + std::string(ip) + "]:" + std::to_string(ntohs(v6->sin6_port));
}

bool Origin::operator==(const Origin& o) const {
  return len == o.len && std::memcmp(&addr, &o.addr, len) == 0;
}

std::string_view Response::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (base::EqualsIgnoreCase(n, name)) return v;
  }
  return {};
}

std::string_view ErrorName(Error e) {
  switch (e) {
    case Error::kNone:
      return "ok";
    case Error::kInvalidRequest:
      return "invalid request";
    case Error::kConnectFailed:
      return "connect failed";
    case Error::kConnectTimeout:
      return "connect timeout";
    case Error::kSendTimeout:
      return "send timeout";
    case Error::kReadTimeout:
      return "read timeout";
    case Error::kConnectionClosed:
      return "connection closed";
    case Error::kMalformedResponse:
      return "malformed response";
    case Error::kTooLarge:
      return "too large";
  }
  return "unknown";
}

bool EncodeRequestHead(const Request& r, const Origin& origin, std::string* out) {
  if (!IsToken(r.method) || r.target.empty() || r.target.front() != '/' || !IsVisible(r.target)) {
    return false;
  }
  if (!r.host.empty() && (!IsVisible(r.host))) return false;
  for (const auto& [name, value] : r.headers) {
    if (!IsToken(name) || IsReserved(name) || !IsFieldValue(value)) return false;
  }
  out->append(r.method).append(" ").append(r.target).append(" HTTP/1.1\r\nHost: ");
  out->append(r.host.empty() ? origin.HostPort() : r.host).append("\r\n");
  for (const auto& [name, value] : r.headers)
    out->append(name).append(": ").append(value).append("\r\n");
  if (!r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH") {
    out->append("Content-Length: ").append(std::to_string(r.body.size())).append("\r\n");
  }
  if (!r.keep_alive) out->append("Connection: close\r\n");
  out->append("\r\n");
  return true;
}

}  // namespace turnpike::http_client
