#include "router/pattern.h"

namespace turnpike::router {

UriPattern ParseUriPattern(std::string_view uri) {
  UriPattern p;
  const size_t star = uri.find('*');
  if (star == std::string_view::npos) {
    p.literal = uri;
    return p;
  }
  p.is_prefix = true;
  p.literal = uri.substr(0, star);
  // A single trailing '*' is the plain prefix form and needs no post-check.
  if (star + 1 != uri.size()) p.glob = uri.substr(star);
  return p;
}

HostPattern ParseHostPattern(std::string_view host) {
  HostPattern p;
  if (!host.empty() && host.front() == '*') {
    p.is_wildcard = true;
    p.literal = host.substr(1);
  } else {
    p.literal = host;
  }
  return p;
}

bool GlobMatch(std::string_view pattern, std::string_view text) {
  // Greedy matching with backtracking to the last '*': O(|pattern| * |text|) worst case,
  // no recursion, no allocation.
  size_t p = 0;
  size_t t = 0;
  size_t star = std::string_view::npos;
  size_t star_text = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_text = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++star_text;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace turnpike::router
