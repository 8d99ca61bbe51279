#include "config/yaml_scalar.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

namespace turnpike::config {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
int HexValue(char c) {
  if (IsDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

// Accumulates digits in `base` as an integer, falling back to a double on overflow.
class Accumulator {
 public:
  void Push(int base, int digit) {
    value_d_ = value_d_ * base + digit;
    if (overflow_) return;
    if (value_ > (std::numeric_limits<int64_t>::max() - digit) / base) {
      overflow_ = true;
      return;
    }
    value_ = value_ * base + digit;
  }
  PlainScalar Result(bool negative) const {
    PlainScalar r;
    if (overflow_) {
      r.kind = PlainScalar::kNumber;
      r.d = negative ? -value_d_ : value_d_;
    } else {
      r.kind = PlainScalar::kInt;
      r.i = negative ? -value_ : value_;
    }
    return r;
  }

 private:
  int64_t value_ = 0;
  double value_d_ = 0;
  bool overflow_ = false;
};

// Strips an optional sign; returns true when it was '-'.
bool TakeSign(std::string_view* s) {
  if (s->empty()) return false;
  if ((*s)[0] == '-') {
    s->remove_prefix(1);
    return true;
  }
  if ((*s)[0] == '+') s->remove_prefix(1);
  return false;
}

// Reads `D[D_]*` in `base` (underscores are ignored); `digit_ok(c)` says whether c is a
// digit of the base.
template <typename DigitOk>
bool ReadDigits(std::string_view s, int base, DigitOk digit_ok, Accumulator* acc) {
  if (s.empty() || !digit_ok(s[0])) return false;
  for (char c : s) {
    if (c == '_') continue;
    if (!digit_ok(c)) return false;
    acc->Push(base, base == 16 ? HexValue(c) : c - '0');
  }
  return true;
}

std::optional<PlainScalar> Octal(std::string_view s) {
  bool negative = TakeSign(&s);
  if (s.empty() || s[0] != '0') return std::nullopt;
  s.remove_prefix(1);
  while (!s.empty() && s[0] == '_') s.remove_prefix(1);
  Accumulator acc;
  auto ok = [](char c) { return c >= '0' && c <= '7'; };
  if (!ReadDigits(s, 8, ok, &acc)) return std::nullopt;
  return acc.Result(negative);
}

double ToDouble(std::string_view s);

// Decimal digits (underscores ignored) too large for int64: converted like Lua's tonumber.
PlainScalar LargeDecimal(std::string_view digits, bool negative) {
  std::string clean;
  for (char c : digits) {
    if (c != '_') clean.push_back(c);
  }
  PlainScalar r;
  r.kind = PlainScalar::kNumber;
  r.d = ToDouble(clean) * (negative ? -1 : 1);
  return r;
}

std::optional<PlainScalar> Decimal(std::string_view s) {
  bool negative = TakeSign(&s);
  while (!s.empty() && s[0] == '_') s.remove_prefix(1);
  Accumulator acc;
  if (!ReadDigits(s, 10, IsDigit, &acc)) return std::nullopt;
  PlainScalar r = acc.Result(negative);
  if (r.kind == PlainScalar::kNumber) return LargeDecimal(s, negative);
  return r;
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool IsLuaDecimalNumber(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  size_t int_digits = 0;
  while (i < s.size() && IsDigit(s[i])) ++i, ++int_digits;
  size_t frac_digits = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && IsDigit(s[i])) ++i, ++frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && IsDigit(s[i])) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

double ToDouble(std::string_view s) {
  std::string copy(s);
  return std::strtod(copy.c_str(), nullptr);  // overflow gives +-HUGE_VAL, like Lua
}

// [-+]?0[xX][0-9a-fA-F]+ (no underscores).
std::optional<PlainScalar> LuaHex(std::string_view s) {
  bool negative = TakeSign(&s);
  if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return std::nullopt;
  Accumulator acc;
  for (char c : s.substr(2)) {
    if (!IsHexDigit(c)) return std::nullopt;
    acc.Push(16, HexValue(c));
  }
  return acc.Result(negative);
}

std::optional<PlainScalar> Float(std::string_view text) {
  if (text.find_first_of(".eE") == std::string_view::npos) return std::nullopt;
  std::string s;
  for (char c : text) {
    if (c != '_') s.push_back(c);
  }
  if (IsLuaDecimalNumber(s)) {
    PlainScalar r;
    r.kind = PlainScalar::kNumber;
    r.d = ToDouble(s);
    return r;
  }
  return LuaHex(s);  // e.g. 0x1E: a Lua number that contains an `E`
}

std::optional<PlainScalar> Bool(std::string_view s) {
  static constexpr std::string_view kTrue[] = {"true", "True", "TRUE", "yes", "Yes",
                                               "YES",  "on",   "On",   "ON"};
  static constexpr std::string_view kFalse[] = {"false", "False", "FALSE", "no", "No",
                                                "NO",    "off",   "Off",   "OFF"};
  PlainScalar r;
  r.kind = PlainScalar::kBool;
  for (std::string_view t : kTrue) {
    if (s == t) {
      r.b = true;
      return r;
    }
  }
  for (std::string_view f : kFalse) {
    if (s == f) return r;
  }
  return std::nullopt;
}

std::optional<PlainScalar> InfOrNan(std::string_view s) {
  PlainScalar r;
  r.kind = PlainScalar::kNumber;
  if (s == ".nan" || s == ".NaN" || s == ".NAN") {
    r.d = std::numeric_limits<double>::quiet_NaN();
    return r;
  }
  bool negative = TakeSign(&s);
  if (s == ".inf" || s == ".Inf" || s == ".INF") {
    r.d = negative ? -std::numeric_limits<double>::infinity()
                   : std::numeric_limits<double>::infinity();
    return r;
  }
  return std::nullopt;
}

std::optional<PlainScalar> Hex(std::string_view s) {
  bool negative = TakeSign(&s);
  if (s.size() < 2 || s[0] != '0' || s[1] != 'x') return std::nullopt;
  s.remove_prefix(2);
  while (!s.empty() && s[0] == '_') s.remove_prefix(1);
  Accumulator acc;
  if (!ReadDigits(s, 16, IsHexDigit, &acc)) return std::nullopt;
  return acc.Result(negative);
}

std::optional<PlainScalar> Binary(std::string_view s) {
  bool negative = TakeSign(&s);
  if (s.size() < 2 || s[0] != '0' || s[1] != 'b') return std::nullopt;
  s.remove_prefix(2);
  while (!s.empty() && s[0] == '_') s.remove_prefix(1);
  Accumulator acc;
  auto ok = [](char c) { return c == '0' || c == '1'; };
  // lyaml's pattern is [01][01_]+: two characters at least.
  if (s.size() < 2 || !ReadDigits(s, 2, ok, &acc)) return std::nullopt;
  return acc.Result(negative);
}

// [-+]?[0-9]+:[0-9][:0-9]*(\.[0-9]+)? (lyaml's [0-5]?[0-9] adds nothing the tail does not
// also accept). Base-60 digit groups are separated by one or more colons.
std::optional<PlainScalar> Sexagesimal(std::string_view s) {
  bool negative = TakeSign(&s);
  std::string_view fraction;
  if (size_t dot = s.find('.'); dot != std::string_view::npos) {
    fraction = s.substr(dot);
    s = s.substr(0, dot);
    if (fraction.size() < 2) return std::nullopt;
    for (char c : fraction.substr(1)) {
      if (!IsDigit(c)) return std::nullopt;
    }
  }
  size_t colon = s.find(':');
  if (colon == 0 || colon == std::string_view::npos || colon + 1 >= s.size() ||
      !IsDigit(s[colon + 1])) {
    return std::nullopt;
  }
  for (size_t i = 0; i < s.size(); ++i) {
    if (!IsDigit(s[i]) && !(i >= colon && s[i] == ':')) return std::nullopt;
  }
  double value = 0;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find(':', pos);
    if (end == std::string_view::npos) end = s.size();
    if (end > pos) value = value * 60 + ToDouble(s.substr(pos, end - pos));
    pos = end + 1;
  }
  PlainScalar r;
  if (!fraction.empty()) {
    r.kind = PlainScalar::kNumber;
    r.d = (value + ToDouble(fraction)) * (negative ? -1 : 1);
  } else if (value <= static_cast<double>(std::numeric_limits<int64_t>::max() / 2)) {
    r.kind = PlainScalar::kInt;
    r.i = static_cast<int64_t>(value) * (negative ? -1 : 1);
  } else {
    r.kind = PlainScalar::kNumber;
    r.d = value * (negative ? -1 : 1);
  }
  return r;
}

}  // namespace

PlainScalar ResolvePlainScalar(std::string_view text) {
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
    return PlainScalar{PlainScalar::kNull};
  }
  using Resolver = std::optional<PlainScalar> (*)(std::string_view);
  static constexpr Resolver kResolvers[] = {Octal,    Decimal, Float,  Bool,       InfOrNan,
                                            Hex,      Binary,  Sexagesimal};
  for (Resolver resolve : kResolvers) {
    if (std::optional<PlainScalar> r = resolve(text)) return *r;
  }
  return PlainScalar{};
}

PlainScalar LuaToNumber(std::string_view text) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return PlainScalar{};
  text = text.substr(first, text.find_last_not_of(kSpace) - first + 1);
  std::string_view digits = text;
  bool negative = TakeSign(&digits);
  if (!digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos) {
    Accumulator acc;
    for (char c : digits) acc.Push(10, c - '0');
    PlainScalar r = acc.Result(negative);
    if (r.kind == PlainScalar::kNumber) return LargeDecimal(digits, negative);
    return r;
  }
  if (IsLuaDecimalNumber(text)) {
    PlainScalar r;
    r.kind = PlainScalar::kNumber;
    r.d = ToDouble(text);
    return r;
  }
  if (std::optional<PlainScalar> hex = LuaHex(text)) return *hex;
  return PlainScalar{};
}

}  // namespace turnpike::config
