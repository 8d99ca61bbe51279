#include "base/strings.h"

#include <charconv>
#include <cstring>
#include <limits>

namespace turnpike::base {

namespace {

// Lowercases the ASCII letters of 8 bytes at once (SWAR); other bytes are unchanged.
inline uint64_t LowerWord(uint64_t x) {
  constexpr uint64_t kHigh = 0x8080808080808080ull;
  uint64_t low7 = x & ~kHigh;
  uint64_t above_z = low7 + 0x2525252525252525ull;     // high bit set where byte > 'Z'
  uint64_t at_least_a = low7 + 0x3f3f3f3f3f3f3f3full;  // high bit set where byte >= 'A'
  uint64_t upper = (at_least_a ^ above_z) & ~x & kHigh;
  return x | (upper >> 2);  // 0x80 >> 2 == 0x20
}

}  // namespace

// Header names are compared on every request: eight bytes per step.
bool EqualBytesIgnoreCase(const char* a, const char* b, size_t n) {
  uint64_t x;
  uint64_t y;
  if (n >= 8) {
    // Whole words, then the last eight bytes (overlapping the previous word): every load is a
    // fixed-size one, where a variable-length tail cost two memcpy calls.
    for (size_t i = 0; i + 8 < n; i += 8) {
      std::memcpy(&x, a + i, 8);
      std::memcpy(&y, b + i, 8);
      if (x != y && LowerWord(x) != LowerWord(y)) return false;
    }
    std::memcpy(&x, a + n - 8, 8);
    std::memcpy(&y, b + n - 8, 8);
    return x == y || LowerWord(x) == LowerWord(y);
  }
  if (n >= 4) {  // two four-byte loads, the second overlapping the first
    uint32_t a0, a1, b0, b1;
    std::memcpy(&a0, a, 4);
    std::memcpy(&a1, a + n - 4, 4);
    std::memcpy(&b0, b, 4);
    std::memcpy(&b1, b + n - 4, 4);
    x = uint64_t{a0} | uint64_t{a1} << 32;
    y = uint64_t{b0} | uint64_t{b1} << 32;
    return x == y || LowerWord(x) == LowerWord(y);
  }
  x = y = 0;
  for (size_t i = 0; i < n; ++i) {
    x = x << 8 | static_cast<unsigned char>(a[i]);
    y = y << 8 | static_cast<unsigned char>(b[i]);
  }
  return x == y || LowerWord(x) == LowerWord(y);
}

std::string ToLower(std::string_view s) {
  std::string out;
  AssignLower(&out, s);
  return out;
}

void AssignLower(std::string* out, std::string_view s) {
  out->resize(s.size());
  char* to = out->data();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t x;
    std::memcpy(&x, s.data() + i, 8);
    x = LowerWord(x);
    std::memcpy(to + i, &x, 8);
  }
  for (; i < s.size(); ++i) to[i] = AsciiLower(s[i]);
}

std::string_view TrimWhitespace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

char* FormatDecimalBackward(char* end, uint64_t v) {
  static constexpr char kPairs[] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
      "8081828384858687888990919293949596979899";
  char* p = end;
  while (v >= 100) {
    const uint64_t pair = v % 100;
    v /= 100;
    p -= 2;
    std::memcpy(p, kPairs + 2 * pair, 2);
  }
  if (v >= 10) {
    p -= 2;
    std::memcpy(p, kPairs + 2 * v, 2);
  } else {
    *--p = static_cast<char>('0' + v);
  }
  return p;
}

void AppendDecimal(std::string* out, uint64_t v) {
  char buf[kMaxDecimalDigits];
  out->append(FormatDecimal(v, buf));
}

int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  char lower = static_cast<char>(c | 0x20);
  if (lower >= 'a' && lower <= 'f') return lower - 'a' + 10;
  return -1;
}

namespace {

int Base64Value(unsigned char ch) {
  if (ch >= 'A' && ch <= 'Z') return ch - 'A';
  if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
  if (ch >= '0' && ch <= '9') return ch - '0' + 52;
  if (ch == '+') return 62;
  if (ch == '/') return 63;
  return -1;
}

}  // namespace

bool AppendBase64Decoded(std::string* out, std::string_view in) {
  size_t len = 0;
  while (len < in.size() && in[len] != '=') {
    if (Base64Value(static_cast<unsigned char>(in[len])) < 0) return false;
    ++len;
  }
  if (len % 4 == 1) return false;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < len; ++i) {
    acc = (acc << 6) | static_cast<uint32_t>(Base64Value(static_cast<unsigned char>(in[i])));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return true;
}

void AppendFormUnescaped(std::string* out, std::string_view raw) {
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    int hi = -1, lo = -1;
    if (c == '+') {
      out->push_back(' ');
    } else if (c == '%' && i + 2 < raw.size() && (hi = HexDigitValue(raw[i + 1])) >= 0 &&
               (lo = HexDigitValue(raw[i + 2])) >= 0) {
      out->push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out->push_back(c);
    }
  }
}

std::optional<uint64_t> ParseUint(std::string_view s) {
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<uint64_t> ParseSize(std::string_view s) {
  s = TrimWhitespace(s);
  if (s.empty()) return std::nullopt;
  uint64_t mult = 1;
  switch (AsciiLower(s.back())) {
    case 'k':
      mult = 1024;
      break;
    case 'm':
      mult = 1024 * 1024;
      break;
    case 'g':
      mult = 1024ull * 1024 * 1024;
      break;
    default:
      break;
  }
  if (mult != 1) s.remove_suffix(1);
  auto v = ParseUint(s);
  if (!v || *v > std::numeric_limits<uint64_t>::max() / mult) return std::nullopt;
  return *v * mult;
}

std::optional<double> ParseDuration(std::string_view s) {
  s = TrimWhitespace(s);
  double mult = 1;
  if (s.size() > 2 && s.substr(s.size() - 2) == "ms") {
    mult = 0.001;
    s.remove_suffix(2);
  } else if (!s.empty()) {
    switch (AsciiLower(s.back())) {
      case 's':
        mult = 1;
        s.remove_suffix(1);
        break;
      case 'm':
        mult = 60;
        s.remove_suffix(1);
        break;
      case 'h':
        mult = 3600;
        s.remove_suffix(1);
        break;
      case 'd':
        mult = 86400;
        s.remove_suffix(1);
        break;
      default:
        break;
    }
  }
  auto v = ParseUint(s);
  if (!v) return std::nullopt;
  return static_cast<double>(*v) * mult;
}

void AppendJsonEscaped(std::string* out, std::string_view s, bool escape_del) {
  constexpr char kHex[] = "0123456789ABCDEF";
  size_t run = 0;  // start of the bytes not yet appended
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\' && (c != 0x7f || !escape_del)) continue;
    out->append(s.data() + run, i - run);
    run = i + 1;
    char short_form = 0;
    switch (c) {
      case '"':
      case '\\':
        short_form = static_cast<char>(c);
        break;
      case '\n':
        short_form = 'n';
        break;
      case '\r':
        short_form = 'r';
        break;
      case '\t':
        short_form = 't';
        break;
      case '\b':
        short_form = 'b';
        break;
      case '\f':
        short_form = 'f';
        break;
      default:
        break;
    }
    if (short_form != 0) {
      const char esc[2] = {'\\', short_form};
      out->append(esc, sizeof(esc));
    } else {
      const char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xf]};
      out->append(esc, sizeof(esc));
    }
  }
  out->append(s.data() + run, s.size() - run);
}

}  // namespace turnpike::base
