#include "upstream/node_set.h"

namespace turnpike::upstream {

NodeSummary SummarizeNodes(const std::vector<Node>& nodes) {
  NodeSummarizer summarizer;
  for (const Node& node : nodes) summarizer.Add(node);
  return summarizer.Finish();
}

}  // namespace turnpike::upstream
