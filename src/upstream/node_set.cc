#include "upstream/node_set.h"

#include <algorithm>
#include <cstring>

#include "upstream/node_set_slot.h"

namespace turnpike::upstream {
namespace {

bool SameNode(const Node& a, const Node& b) {
  return a.port == b.port && a.weight == b.weight && a.priority == b.priority &&
         a.addr_len == b.addr_len && a.host == b.host &&
         std::memcmp(&a.addr, &b.addr, std::min<size_t>(a.addr_len, sizeof(a.addr))) == 0;
}

}  // namespace

bool SameNodes(const NodeSet& a, const NodeSet& b) {
  if (a.nodes.size() != b.nodes.size()) return false;
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    if (!SameNode(a.nodes[i], b.nodes[i])) return false;
  }
  return true;
}

const NodeSetConstSharedPtr& EmptyNodeSet() {
  static const NodeSetConstSharedPtr* empty =
      new NodeSetConstSharedPtr(std::make_shared<NodeSet>());
  return *empty;
}

}  // namespace turnpike::upstream
