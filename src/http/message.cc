#include "http/message.h"

#include <cstdint>

#include "base/strings.h"

namespace turnpike::http {

void RequestHead::Clear() {
  method = base::Method::kOther;
  method_name = {};
  target = path = query = host = {};
  version_minor = 1;
  headers.clear();
  framing = Framing::kNone;
  content_length = 0;
  keep_alive = true;
  expect_continue = false;
  connection_token_count = 0;
}

void ResponseHead::Clear() {
  status = 0;
  reason = {};
  version_minor = 1;
  headers.clear();
  framing = Framing::kNone;
  content_length = 0;
  keep_alive = true;
  connection_token_count = 0;
}

HeaderId ClassifyHeaderName(std::string_view n) {
  using base::EqualsLowerName;
  using enum HeaderId;
  // By length, then by a letter that tells the candidates of that length apart: one compare.
  switch (n.size()) {
    case 2:
      return EqualsLowerName(n, "te") ? kTe : kOther;
    case 4:
      return EqualsLowerName(n, "host") ? kHost : kOther;
    case 6:
      if ((n[0] | 0x20) == 'e') return EqualsLowerName(n, "expect") ? kExpect : kOther;
      return EqualsLowerName(n, "server") ? kServer : kOther;
    case 7:
      if ((n[0] | 0x20) == 't') return EqualsLowerName(n, "trailer") ? kTrailer : kOther;
      return EqualsLowerName(n, "upgrade") ? kUpgrade : kOther;
    case 9:
      if ((n[0] | 0x20) == 'x') return EqualsLowerName(n, "x-real-ip") ? kXRealIp : kOther;
      return EqualsLowerName(n, "forwarded") ? kForwarded : kOther;
    case 10:
      if ((n[0] | 0x20) == 'c') return EqualsLowerName(n, "connection") ? kConnection : kOther;
      return EqualsLowerName(n, "keep-alive") ? kKeepAlive : kOther;
    case 14:
      return EqualsLowerName(n, "content-length") ? kContentLength : kOther;
    case 15:
      return EqualsLowerName(n, "x-forwarded-for") ? kXForwardedFor : kOther;
    case 16:
      if ((n[0] | 0x20) == 'p') {
        return EqualsLowerName(n, "proxy-connection") ? kProxyConnection : kOther;
      }
      if ((n[12] | 0x20) == 'h') {
        return EqualsLowerName(n, "x-forwarded-host") ? kXForwardedHost : kOther;
      }
      return EqualsLowerName(n, "x-forwarded-port") ? kXForwardedPort : kOther;
    case 17:
      if ((n[0] | 0x20) == 't') {
        return EqualsLowerName(n, "transfer-encoding") ? kTransferEncoding : kOther;
      }
      return EqualsLowerName(n, "x-forwarded-proto") ? kXForwardedProto : kOther;
    default:
      return kOther;
  }
}

bool IsListedInTokens(std::string_view name, const std::string_view* tokens, uint8_t count) {
  for (uint8_t i = 0; i < count; ++i) {
    if (base::EqualsIgnoreCase(name, tokens[i])) return true;
  }
  return false;
}

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 101:
      return "Switching Protocols";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 303:
      return "See Other";
    case 304:
      return "Not Modified";
    case 307:
      return "Temporary Redirect";
    case 308:
      return "Permanent Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Not Allowed";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Request Entity Too Large";
    case 414:
      return "Request-URI Too Large";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Temporarily Unavailable";
    case 504:
      return "Gateway Time-out";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

size_t SpanOfViews(std::string_view first, std::string_view last) {
  const auto a = reinterpret_cast<uintptr_t>(first.data());
  const auto b = reinterpret_cast<uintptr_t>(last.data()) + last.size();
  return a != 0 && b > a && b - a <= 64 * 1024 ? b - a : 0;
}

}  // namespace turnpike::http
