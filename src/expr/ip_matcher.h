// IpMatcher: whether a client address belongs to a set of IPv4/IPv6 addresses and CIDR blocks
// (a route's `remote_addrs`, the `ipmatch` operator of `vars`; lua-resty-ipmatcher semantics).
//
// Built once on the control thread; afterwards immutable and safe to share between threads.
// The entries are kept as sorted, merged address ranges per family, so Match() is one
// address parse plus a binary search: O(log ranges), no allocation.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "turnpike/status.h"

namespace turnpike::expr {

class IpMatcher {
 public:
  // Control thread. Each entry is an address ("10.0.0.1", "2001:db8::1", "[::1]") or an
  // address with a prefix length ("10.0.0.0/8", "fe80::/10", "0.0.0.0/0"); host bits below the
  // prefix are ignored ("10.1.2.3/8" is 10.0.0.0/8), as lua-resty-ipmatcher does. IPv4 parts
  // are strict dotted quads (no leading zeros). An empty list matches nothing.
  // Error: "invalid IP or CIDR '<entry>'".
  static StatusOr<IpMatcher> Build(const std::vector<std::string>& entries);

  // Worker, hot path. Parses `ip` (IPv4 dotted quad, or IPv6 with optional brackets) and
  // returns whether it falls in one of the entries; false when it does not parse. Families
  // do not mix: an IPv4-mapped IPv6 address ("::ffff:10.0.0.1") only matches IPv6 entries.
  bool Match(std::string_view ip) const;

  // Ranges left after merging overlapping and adjacent entries.
  size_t range_count() const { return v4_.size() + v6_.size(); }

  // Address parsers shared with tests and benchmarks. Allocation-free.
  struct V6 {
    uint64_t hi = 0;
    uint64_t lo = 0;
    auto operator<=>(const V6&) const = default;
  };
  static bool ParseV4(std::string_view text, uint32_t* out);
  static bool ParseV6(std::string_view text, V6* out);

 private:
  struct V4Range {
    uint32_t first;
    uint32_t last;
  };
  struct V6Range {
    V6 first;
    V6 last;
  };
  std::vector<V4Range> v4_;  // sorted by first, disjoint, not adjacent
  std::vector<V6Range> v6_;
};

}  // namespace turnpike::expr
