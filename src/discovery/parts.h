// Node lists in sorted parts (DiscoverySink::PublishParts): the merge that turns them into one
// list, shared by the sink's default and the Directory's fallback.
#pragma once

#include <vector>

#include "turnpike/discovery.h"

namespace turnpike::discovery {

// APISIX's node order (its sort_nodes_cmp): host text byte by byte, then port.
inline int CompareNodeKey(const DiscoveredNode& a, const DiscoveredNode& b) {
  if (const int c = a.host.compare(b.host); c != 0) return c;
  return a.port - b.port;
}
inline bool NodeKeyLess(const DiscoveredNode& a, const DiscoveredNode& b) {
  return CompareNodeKey(a, b) < 0;
}

// The nodes of `parts` (each sorted by NodeKeyLess; null ones skipped), merged in that order.
// A run of the part with the smallest head is copied up to the next part's head at once (a
// binary search), so parts that do not interleave, as a service's EndpointSlices usually do
// not (each holds a block of addresses), cost a search each and a copy. Equal nodes keep the
// parts' order.
DiscoveredNodes MergeParts(const std::vector<DiscoveredNodesConstSharedPtr>& parts);

}  // namespace turnpike::discovery
