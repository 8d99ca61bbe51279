// IpMatcher: whether an address belongs to a set of IPv4/IPv6 addresses and CIDR blocks
// (lua-resty-ipmatcher's semantics), for plugins such as ip-restriction.
//
// Built once on the control thread, then immutable: copies share the compiled ranges and
// any number of threads may call Match() at once. Match() is one address parse plus a binary
// search over merged ranges, O(log ranges), with no allocation.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "turnpike/status.h"

namespace turnpike {

class IpMatcher {
 public:
  // Matches nothing.
  IpMatcher() = default;

  // Control thread. Each entry is an address ("10.0.0.1", "2001:db8::1", "[::1]") or a CIDR
  // ("10.0.0.0/8", "fe80::/10"); host bits below the prefix are ignored. IPv4 parts are strict
  // dotted quads. An empty list matches nothing. Error: "invalid IP or CIDR '<entry>'".
  static StatusOr<IpMatcher> Build(const std::vector<std::string>& entries);

  // Any thread, hot path. False when `ip` does not parse. An IPv4-mapped IPv6 address
  // ("::ffff:10.0.0.1") matches only IPv6 entries.
  bool Match(std::string_view ip) const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace turnpike
