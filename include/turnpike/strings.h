// String helpers for plugins: the ASCII case rules HTTP names follow, and the query/form
// unescaping and base64 decoding nginx applies. All are allocation-free unless they return a
// std::string; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace turnpike {

constexpr char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

// ASCII case-insensitive equality (header names, tokens).
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// Appends `v` in decimal.
void AppendDecimal(std::string* out, uint64_t v);
// `v` in decimal, written into `buf` (at its end); the view is valid as long as `buf`. For a
// header value on the hot path: no string to grow.
std::string_view FormatDecimal(uint64_t v, char (&buf)[20]);

// Appends `raw` unescaped the way query strings and form bodies are (ngx.unescape_uri,
// ngx.req.get_post_args): '+' is a space, %XX a byte, and a '%' that starts no valid escape
// stays as it is.
void AppendFormUnescaped(std::string* out, std::string_view raw);

// Appends the bytes `in` encodes in base64 as nginx's ngx_decode_base64 reads it (standard
// alphabet; the data ends at the first '=', padding optional). False, `out` unchanged, for a
// character outside the alphabet or a length of 4n+1.
bool AppendBase64Decoded(std::string* out, std::string_view in);

// Appends `s` escaped as the content of a JSON string (no quotes): '"', '\\' and control
// characters, short forms where JSON has them, else \u00XX (uppercase hex, as
// nginx's escape=json). `escape_del`: also DEL (0x7f), as file-logger's entries do.
void AppendJsonEscaped(std::string* out, std::string_view s, bool escape_del = false);

}  // namespace turnpike
