// Small string helpers used across modules. All are allocation-free unless they return a
// std::string.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace turnpike::base {

constexpr char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

// ASCII case-insensitive equality of `n` bytes at `a` and `b`.
bool EqualBytesIgnoreCase(const char* a, const char* b, size_t n);
// Inline, so that the usual answer when matching a header name against a list (lengths
// differ) costs no call.
inline bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && EqualBytesIgnoreCase(a.data(), b.data(), a.size());
}
// True when `s` equals `lower`, a name spelled in lower case with letters a-z and no other byte of
// 0x40-0x7f (digits and '-' are fine), ignoring the case of `s`'s letters. Inline
// and word-wise, for matching the few names a protocol knows (a header name against
// "content-length"): with `lower` a literal, the masks fold to constants. Exact for any `s`: a
// byte matches a letter only as that letter in either case, and anything else only as itself.
inline bool EqualsLowerName(std::string_view s, std::string_view lower) {
  const size_t n = lower.size();
  if (s.size() != n) return false;
  // A letter of `lower` has its 0x40 bit set; 0x20 is the case bit to ignore there.
  auto same = [](uint64_t x, uint64_t l) { return (x | ((l & 0x4040404040404040ull) >> 1)) == l; };
  auto load = [](const char* p, size_t k) {
    uint64_t v = 0;
    __builtin_memcpy(&v, p, k);
    return v;
  };
  if (n >= 8) {
    for (size_t i = 0; i + 8 < n; i += 8) {
      if (!same(load(s.data() + i, 8), load(lower.data() + i, 8))) return false;
    }
    return same(load(s.data() + n - 8, 8), load(lower.data() + n - 8, 8));
  }
  if (n >= 4) {
    return same(load(s.data(), 4) | load(s.data() + n - 4, 4) << 32,
                load(lower.data(), 4) | load(lower.data() + n - 4, 4) << 32);
  }
  for (size_t i = 0; i < n; ++i) {
    if (!same(static_cast<unsigned char>(s[i]), static_cast<unsigned char>(lower[i]))) {
      return false;
    }
  }
  return true;
}
std::string ToLower(std::string_view s);
// Replaces `out` with `s`, its ASCII letters in lower case (eight bytes per step; no
// allocation once `out` holds as much).
void AssignLower(std::string* out, std::string_view s);
std::string_view TrimWhitespace(std::string_view s);

// Writes `v` in decimal so that it ends just before `end`, two digits per step; returns where
// it begins (at most kMaxDecimalDigits bytes before `end`).
constexpr size_t kMaxDecimalDigits = 20;
char* FormatDecimalBackward(char* end, uint64_t v);
// `v` in decimal, written at the end of `buf`; the view is valid as long as `buf`.
inline std::string_view FormatDecimal(uint64_t v, char (&buf)[kMaxDecimalDigits]) {
  char* end = buf + kMaxDecimalDigits;
  char* begin = FormatDecimalBackward(end, v);
  return std::string_view(begin, static_cast<size_t>(end - begin));
}
// Appends `v` in decimal to `out` (no temporary string).
void AppendDecimal(std::string* out, uint64_t v);

// The value of hex digit `c` (either case), or -1.
int HexDigitValue(char c);

// Appends `raw` unescaped the way query strings and form bodies are (ngx.unescape_uri,
// ngx.req.get_post_args): '+' is a space, %XX a byte, and a '%' that starts no valid escape
// stays as it is.
void AppendFormUnescaped(std::string* out, std::string_view raw);

// Appends the bytes `in` encodes in base64 the way nginx's ngx_decode_base64 reads it: the
// standard alphabet, the data ends at the first '=' (padding optional, what follows ignored).
// False, with `out` unchanged, for a character outside the alphabet or a length of 4n+1.
bool AppendBase64Decoded(std::string* out, std::string_view in);

// Appends `s` escaped as the content of a JSON string (no quotes): '"', '\\' and control
// characters, short forms where JSON has them, else \u00XX (uppercase hex, as
// nginx's escape=json). `escape_del`: also DEL (0x7f), as file-logger's entries do.
void AppendJsonEscaped(std::string* out, std::string_view s, bool escape_del = false);

// Parses a non-negative decimal integer that fits in uint64_t; nullopt on any other input.
std::optional<uint64_t> ParseUint(std::string_view s);

// Parses nginx-style sizes: "1024", "8k", "10m", "1g" (case-insensitive suffix).
std::optional<uint64_t> ParseSize(std::string_view s);

// Parses nginx-style durations into seconds: "60", "60s", "500ms", "2m", "1h", "1d".
std::optional<double> ParseDuration(std::string_view s);

}  // namespace turnpike::base
