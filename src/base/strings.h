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
std::string ToLower(std::string_view s);
std::string_view TrimWhitespace(std::string_view s);

// Writes `v` in decimal so that it ends just before `end`, two digits per step; returns where
// it begins (at most kMaxDecimalDigits bytes before `end`).
constexpr size_t kMaxDecimalDigits = 20;
char* FormatDecimalBackward(char* end, uint64_t v);
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
