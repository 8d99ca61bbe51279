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

NodeSummary SummarizeNodes(const std::vector<Node>& nodes) {
  NodeSummary summary;
  summary.summarized = true;
  if (nodes.empty()) return summary;
  const int weight = nodes[0].weight;
  const int priority = nodes[0].priority;
  summary.uniform = std::all_of(nodes.begin(), nodes.end(), [&](const Node& n) {
    return n.weight == weight && n.priority == priority;
  });
  if (summary.uniform) summary.weight = weight;
  return summary;
}

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
