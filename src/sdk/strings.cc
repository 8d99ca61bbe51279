#include "turnpike/strings.h"

#include "base/strings.h"

namespace turnpike {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return base::EqualsIgnoreCase(a, b);
}

void AppendDecimal(std::string* out, uint64_t v) { base::AppendDecimal(out, v); }

std::string_view FormatDecimal(uint64_t v, char (&buf)[20]) {
  static_assert(sizeof(buf) == base::kMaxDecimalDigits);
  return base::FormatDecimal(v, buf);
}

void AppendFormUnescaped(std::string* out, std::string_view raw) {
  base::AppendFormUnescaped(out, raw);
}

bool AppendBase64Decoded(std::string* out, std::string_view in) {
  return base::AppendBase64Decoded(out, in);
}

void AppendJsonEscaped(std::string* out, std::string_view s, bool escape_del) {
  base::AppendJsonEscaped(out, s, escape_del);
}

}  // namespace turnpike
