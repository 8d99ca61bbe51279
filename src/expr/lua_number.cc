#include "expr/lua_number.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "base/strings.h"

namespace turnpike::expr {
namespace {

bool IsLuaSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

}  // namespace

std::optional<double> LuaToNumber(std::string_view s) {
  while (!s.empty() && IsLuaSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsLuaSpace(s.back())) s.remove_suffix(1);
  bool negative = false;
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  double value = 0;
  if (base::EqualsIgnoreCase(s, "inf") || base::EqualsIgnoreCase(s, "infinity")) {
    value = std::numeric_limits<double>::infinity();
  } else if (base::EqualsIgnoreCase(s, "nan")) {
    value = std::numeric_limits<double>::quiet_NaN();
  } else {
    auto format = std::chars_format::general;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      s.remove_prefix(2);
      format = std::chars_format::hex;
      if (!IsHexDigit(s.front()) && s.front() != '.') return std::nullopt;
    } else if (!IsDigit(s.front()) && s.front() != '.') {
      return std::nullopt;  // from_chars would take a second sign, "inf" was handled above
    }
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value, format);
    if (end != s.data() + s.size()) return std::nullopt;
    if (ec == std::errc::result_out_of_range) {
      // Lua still has a value (huge -> inf, tiny -> 0), which from_chars does not give; strtod
      // does. Rare, so a bounded copy is fine.
      char buf[128] = "0x";
      const size_t skip = format == std::chars_format::hex ? 2 : 0;
      if (s.size() + skip >= sizeof(buf)) return std::nullopt;
      std::memcpy(buf + skip, s.data(), s.size());
      buf[s.size() + skip] = '\0';
      value = std::strtod(buf, nullptr);
    } else if (ec != std::errc()) {
      return std::nullopt;
    }
  }
  return negative ? -value : value;
}

std::string LuaNumberToString(double v) {
  char buf[64];
  const int n = std::snprintf(buf, sizeof(buf), "%.14g", v);
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace turnpike::expr
