// Node lists as text for the discovery tests' failure messages and comparisons.
#pragma once

#include <optional>
#include <string>

#include "turnpike/discovery.h"

namespace turnpike::discovery {

// "host:port wWEIGHT; " for each node in order, "(none)" for an empty list.
inline std::string Describe(const DiscoveredNodes& nodes) {
  std::string out;
  for (const DiscoveredNode& n : nodes) {
    out += n.host + ":" + std::to_string(n.port) + " w" + std::to_string(n.weight) + "; ";
  }
  return out.empty() ? "(none)" : out;
}

// The same for a sink's last list, "(nothing published)" when there was none.
inline std::string Describe(const std::optional<DiscoveredNodes>& nodes) {
  return nodes ? Describe(*nodes) : "(nothing published)";
}

}  // namespace turnpike::discovery
