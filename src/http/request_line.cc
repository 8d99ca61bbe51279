#include "http/request_line.h"

#include <array>
#include <cstdint>

#include "base/strings.h"

namespace turnpike::http {
namespace {

// One table lookup per byte: these loops run over every request line and Host.
enum : uint8_t {
  kMethodChar = 1,   // nginx's method alphabet: A-Z, '_', '-'
  kTargetByte = 2,   // visible ASCII and obs-text: all but controls, space and DEL
  kRegNameChar = 4,  // RFC 3986 unreserved and sub-delims (reg-name besides pct-encoded)
  kHexDigit = 8,
  kDigit = 16,
  kIpLiteralChar = 32,  // inside [...]: hex digits, ':' and '.'
};

constexpr std::array<uint8_t, 256> kCharClass = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    bool digit = c >= '0' && c <= '9';
    bool upper = c >= 'A' && c <= 'Z';
    bool alpha = upper || (c >= 'a' && c <= 'z');
    bool hex = digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    uint8_t v = 0;
    if (upper || c == '_' || c == '-') v |= kMethodChar;
    if (c > 0x20 && c != 0x7f) v |= kTargetByte;
    if (alpha || digit ||
        std::string_view("-._~!$&'()*+,;=").find(static_cast<char>(c)) != std::string_view::npos) {
      v |= kRegNameChar;
    }
    if (hex) v |= kHexDigit | kIpLiteralChar;
    if (digit) v |= kDigit;
    if (c == ':' || c == '.') v |= kIpLiteralChar;
    t[static_cast<size_t>(c)] = v;
  }
  return t;
}();

inline bool Is(char c, uint8_t cls) { return (kCharClass[static_cast<uint8_t>(c)] & cls) != 0; }
bool IsDigit(char c) { return Is(c, kDigit); }
bool IsHexDigit(char c) { return Is(c, kHexDigit); }

bool IsValidRegName(std::string_view name) {
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (Is(c, kRegNameChar)) continue;
    if (c != '%' || i + 2 >= name.size() || !IsHexDigit(name[i + 1]) || !IsHexDigit(name[i + 2])) {
      return false;
    }
    i += 2;
  }
  return true;
}

bool IsValidIpLiteral(std::string_view inner) {
  if (inner.empty()) return false;
  for (char c : inner) {
    if (!Is(c, kIpLiteralChar)) return false;
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
  while (i < data.size() && Is(data[i], kMethodChar)) ++i;
  if (i == 0 || i >= data.size() || data[i] != ' ') return 400;
  line->method = data.substr(0, i);
  size_t target_begin = ++i;
  while (i < data.size() && Is(data[i], kTargetByte)) ++i;
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
