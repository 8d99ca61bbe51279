// Whole-string regex matches for test assertions, with PCRE2 (the project's regex engine;
// std::regex is not used anywhere).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace turnpike::testing {

// True when `pattern` (PCRE2 syntax) matches all of `s`. An invalid pattern fails the
// current test and returns false.
bool FullMatch(std::string_view s, const char* pattern);
inline bool FullMatch(const std::optional<std::string>& s, const char* pattern) {
  return s.has_value() && FullMatch(std::string_view(*s), pattern);
}

}  // namespace turnpike::testing
