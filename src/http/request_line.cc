#include "http/request_line.h"

#include "base/strings.h"

namespace turnpike::http {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsHexDigit(char c) { return base::HexDigitValue(c) >= 0; }

bool IsMethodChar(char c) { return (c >= 'A' && c <= 'Z') || c == '_' || c == '-'; }

// Visible ASCII and obs-text: everything but controls, space and DEL.
bool IsTargetByte(char c) {
  auto u = static_cast<unsigned char>(c);
  return u > 0x20 && u != 0x7f;
}

// RFC 3986 unreserved and sub-delims: the characters of a reg-name besides pct-encoded.
bool IsRegNameChar(char c) {
  if (IsAlpha(c) || IsDigit(c)) return true;
  switch (c) {
    case '-':
    case '.':
    case '_':
    case '~':  // unreserved
    case '!':
    case '$':
    case '&':
    case '\'':
    case '(':
    case ')':
    case '*':  // sub-delims
    case '+':
    case ',':
    case ';':
    case '=':
      return true;
    default:
      return false;
  }
}

bool IsValidRegName(std::string_view name) {
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c == '%') {
      if (i + 2 >= name.size() || !IsHexDigit(name[i + 1]) || !IsHexDigit(name[i + 2])) {
        return false;
      }
      i += 2;
    } else if (!IsRegNameChar(c)) {
      return false;
    }
  }
  return true;
}

bool IsValidIpLiteral(std::string_view inner) {
  if (inner.empty()) return false;
  for (char c : inner) {
    if (!IsHexDigit(c) && c != ':' && c != '.') return false;
  }
  return true;
}

bool IsValidPort(std::string_view port) {
  if (port.size() > 5) return false;
  for (char c : port) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

}  // namespace

int ParseRequestLine(std::string_view data, RequestLine* line) {
  size_t i = 0;
  while (i < data.size() && IsMethodChar(data[i])) ++i;
  if (i == 0 || i >= data.size() || data[i] != ' ') return 400;
  line->method = data.substr(0, i);
  size_t target_begin = ++i;
  while (i < data.size() && IsTargetByte(data[i])) ++i;
  if (i == target_begin || i >= data.size() || data[i] != ' ') return 400;
  line->target = data.substr(target_begin, i - target_begin);
  std::string_view rest = data.substr(i + 1);
  // "HTTP/" DIGIT "." DIGIT CRLF
  if (rest.size() < 10 || rest.substr(0, 5) != "HTTP/" || !IsDigit(rest[5]) || rest[6] != '.' ||
      !IsDigit(rest[7]) || rest[8] != '\r' || rest[9] != '\n') {
    return 400;
  }
  line->major = rest[5] - '0';
  line->minor = rest[7] - '0';
  line->length = i + 1 + 10;
  return line->major == 1 ? 0 : 505;
}

bool SplitRequestTarget(std::string_view target, RequestTarget* out) {
  *out = RequestTarget{};
  std::string_view t = target.substr(0, target.find('#'));
  out->without_fragment = t;
  if (t.empty()) return false;  // "#x"
  if (t == "*") {
    out->path = t;
    return target.size() == 1;
  }
  if (t[0] != '/') {
    // absolute-form: http(s)://authority[/path][?query]
    size_t colon = t.find("://");
    if (colon == std::string_view::npos) return false;
    std::string_view scheme = t.substr(0, colon);
    if (!base::EqualsIgnoreCase(scheme, "http") && !base::EqualsIgnoreCase(scheme, "https")) {
      return false;
    }
    std::string_view rest = t.substr(colon + 3);
    size_t end = rest.find_first_of("/?");
    out->authority = rest.substr(0, end);
    if (out->authority.empty() || !IsValidHost(out->authority)) return false;
    t = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  }
  size_t q = t.find('?');
  out->path = t.substr(0, q);
  if (q != std::string_view::npos) out->query = t.substr(q + 1);
  if (out->path.empty()) out->path = "/";
  return true;
}

bool IsValidHost(std::string_view host) {
  std::string_view port;
  if (!host.empty() && host.front() == '[') {
    size_t close = host.find(']');
    if (close == std::string_view::npos || !IsValidIpLiteral(host.substr(1, close - 1))) {
      return false;
    }
    std::string_view after = host.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return false;
      port = after.substr(1);
    }
  } else {
    size_t colon = host.find(':');
    if (colon != std::string_view::npos) {
      port = host.substr(colon + 1);
      host = host.substr(0, colon);
    }
    if (!IsValidRegName(host)) return false;
  }
  return IsValidPort(port);
}

}  // namespace turnpike::http
