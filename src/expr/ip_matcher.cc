#include "expr/ip_matcher.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace turnpike::expr {
namespace {

// "0".."32" / "0".."128": decimal digits only, no sign, no leading zeros beyond "0".
bool ParsePrefixLength(std::string_view text, int max, int* out) {
  if (text.empty() || text.size() > 3) return false;
  if (text.size() > 1 && text[0] == '0') return false;
  int v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v > max) return false;
  *out = v;
  return true;
}

IpMatcher::V6 Mask6(int len) {
  IpMatcher::V6 m;
  m.hi = len >= 64 ? ~uint64_t{0} : (len == 0 ? 0 : ~uint64_t{0} << (64 - len));
  m.lo = len <= 64 ? 0 : ~uint64_t{0} << (128 - len);
  return m;
}

// a + 1 == b, without overflow.
bool Adjacent4(uint32_t a, uint32_t b) { return a != UINT32_MAX && a + 1 == b; }
bool Adjacent6(const IpMatcher::V6& a, const IpMatcher::V6& b) {
  IpMatcher::V6 next = a;
  if (++next.lo == 0) {
    if (++next.hi == 0) return false;
  }
  return next == b;
}

}  // namespace

bool IpMatcher::ParseV4(std::string_view text, uint32_t* out) {
  uint32_t addr = 0;
  size_t i = 0;
  for (int part = 0; part < 4; ++part) {
    if (part > 0) {
      if (i >= text.size() || text[i] != '.') return false;
      ++i;
    }
    const size_t begin = i;
    uint32_t v = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && i - begin < 3) {
      v = v * 10 + static_cast<uint32_t>(text[i] - '0');
      ++i;
    }
    const size_t digits = i - begin;
    if (digits == 0 || v > 255 || (digits > 1 && text[begin] == '0')) return false;
    addr = addr << 8 | v;
  }
  if (i != text.size()) return false;
  *out = addr;
  return true;
}

bool IpMatcher::ParseV6(std::string_view text, V6* out) {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    text = text.substr(1, text.size() - 2);
  }
  char buf[64];
  if (text.empty() || text.size() >= sizeof(buf) || text.find('\0') != std::string_view::npos) {
    return false;
  }
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  unsigned char bytes[16];
  if (inet_pton(AF_INET6, buf, bytes) != 1) return false;
  V6 v;
  for (int i = 0; i < 8; ++i) v.hi = v.hi << 8 | bytes[i];
  for (int i = 8; i < 16; ++i) v.lo = v.lo << 8 | bytes[i];
  *out = v;
  return true;
}

StatusOr<IpMatcher> IpMatcher::Build(const std::vector<std::string>& entries) {
  IpMatcher m;
  for (const std::string& entry : entries) {
    std::string_view addr = entry;
    std::string_view prefix;
    const size_t slash = addr.find('/');
    if (slash != std::string_view::npos) {
      prefix = addr.substr(slash + 1);
      addr = addr.substr(0, slash);
    }
    auto invalid = [&entry] { return Status::Error("invalid IP or CIDR '" + entry + "'"); };
    uint32_t v4;
    V6 v6;
    int len;
    if (ParseV4(addr, &v4)) {
      len = 32;
      if (slash != std::string_view::npos && !ParsePrefixLength(prefix, 32, &len)) {
        return invalid();
      }
      const uint32_t mask = len == 0 ? 0 : ~uint32_t{0} << (32 - len);
      m.v4_.push_back({v4 & mask, (v4 & mask) | ~mask});
    } else if (ParseV6(addr, &v6)) {
      len = 128;
      if (slash != std::string_view::npos && !ParsePrefixLength(prefix, 128, &len)) {
        return invalid();
      }
      const V6 mask = Mask6(len);
      const V6 first{v6.hi & mask.hi, v6.lo & mask.lo};
      m.v6_.push_back({first, V6{first.hi | ~mask.hi, first.lo | ~mask.lo}});
    } else {
      return invalid();
    }
  }

  // Sort and merge so that the ranges are disjoint: then the only candidate for an address is
  // the last range starting at or before it.
  std::sort(m.v4_.begin(), m.v4_.end(),
            [](const V4Range& a, const V4Range& b) { return a.first < b.first; });
  std::vector<V4Range> v4;
  for (const V4Range& r : m.v4_) {
    if (!v4.empty() && (r.first <= v4.back().last || Adjacent4(v4.back().last, r.first))) {
      v4.back().last = std::max(v4.back().last, r.last);
    } else {
      v4.push_back(r);
    }
  }
  m.v4_ = std::move(v4);
  std::sort(m.v6_.begin(), m.v6_.end(),
            [](const V6Range& a, const V6Range& b) { return a.first < b.first; });
  std::vector<V6Range> v6;
  for (const V6Range& r : m.v6_) {
    if (!v6.empty() && (r.first <= v6.back().last || Adjacent6(v6.back().last, r.first))) {
      v6.back().last = std::max(v6.back().last, r.last);
    } else {
      v6.push_back(r);
    }
  }
  m.v6_ = std::move(v6);
  return m;
}

bool IpMatcher::Match(std::string_view ip) const {
  uint32_t v4;
  if (ParseV4(ip, &v4)) {
    auto it = std::upper_bound(v4_.begin(), v4_.end(), v4,
                               [](uint32_t a, const V4Range& r) { return a < r.first; });
    return it != v4_.begin() && v4 <= std::prev(it)->last;
  }
  if (v6_.empty()) return false;
  V6 v6;
  if (!ParseV6(ip, &v6)) return false;
  auto it = std::upper_bound(v6_.begin(), v6_.end(), v6,
                             [](const V6& a, const V6Range& r) { return a < r.first; });
  return it != v6_.begin() && v6 <= std::prev(it)->last;
}

}  // namespace turnpike::expr
