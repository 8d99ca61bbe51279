#include "base/strings.h"

#include <charconv>
#include <limits>

namespace turnpike::base {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = AsciiLower(c);
  return out;
}

std::string_view TrimWhitespace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
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
    case 'k': mult = 1024; break;
    case 'm': mult = 1024 * 1024; break;
    case 'g': mult = 1024ull * 1024 * 1024; break;
    default: break;
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
      case 's': mult = 1; s.remove_suffix(1); break;
      case 'm': mult = 60; s.remove_suffix(1); break;
      case 'h': mult = 3600; s.remove_suffix(1); break;
      case 'd': mult = 86400; s.remove_suffix(1); break;
      default: break;
    }
  }
  auto v = ParseUint(s);
  if (!v) return std::nullopt;
  return static_cast<double>(*v) * mult;
}

}  // namespace turnpike::base
