#include "http/uri.h"

#include "base/strings.h"

namespace turnpike::http {

bool IsNormalPath(std::string_view path) {
  char prev = 0;
  for (size_t i = 0; i < path.size(); ++i) {
    char c = path[i];
    if (c == '%') return false;
    if (c == '/' && prev == '/') return false;
    if (c == '.' && prev == '/') {
      // "/." followed by end, '/', or ".": a dot segment
      size_t next = i + 1;
      if (next == path.size() || path[next] == '/') return false;
      if (path[next] == '.' && (next + 1 == path.size() || path[next + 1] == '/')) return false;
    }
    prev = c;
  }
  return true;
}

bool NormalizePath(std::string_view path, std::string* out) {
  out->clear();
  // Decode first, then resolve segments on the decoded text (nginx decodes "%2E%2E" into a
  // ".." segment and resolves it too).
  std::string& decoded = *out;
  for (size_t i = 0; i < path.size(); ++i) {
    char c = path[i];
    if (c == '%') {
      if (i + 2 >= path.size()) return false;
      int hi = base::HexDigitValue(path[i + 1]);
      int lo = base::HexDigitValue(path[i + 2]);
      if (hi < 0 || lo < 0) return false;
      c = static_cast<char>(hi * 16 + lo);
      if (c == '\0') return false;
      i += 2;
    }
    decoded.push_back(c);
  }
  // Resolve in place: write position `w` never passes read position `r`.
  size_t w = 0;
  size_t r = 0;
  size_t n = decoded.size();
  while (r < n) {
    if (decoded[r] != '/') {
      decoded[w++] = decoded[r++];
      continue;
    }
    // at a '/': skip duplicates
    while (r + 1 < n && decoded[r + 1] == '/') ++r;
    size_t seg = r + 1;
    size_t seg_end = seg;
    while (seg_end < n && decoded[seg_end] != '/') ++seg_end;
    std::string_view segment(decoded.data() + seg, seg_end - seg);
    if (segment == ".") {
      r = seg_end;
      if (r == n) decoded[w++] = '/';
      continue;
    }
    if (segment == "..") {
      if (w == 0) return false;  // above the root
      // drop the previous segment
      while (w > 0 && decoded[w - 1] != '/') --w;
      if (w > 0) --w;  // the '/' before it
      r = seg_end;
      if (r == n) decoded[w++] = '/';
      continue;
    }
    decoded[w++] = '/';
    ++r;
  }
  decoded.resize(w);
  if (decoded.empty()) decoded = "/";
  return true;
}

}  // namespace turnpike::http
