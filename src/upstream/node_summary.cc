#include <algorithm>

#include "upstream/node_set.h"

namespace turnpike::upstream {

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

}  // namespace turnpike::upstream
