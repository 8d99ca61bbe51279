#include "upstream/node_set.h"

namespace turnpike::upstream {

NodeSummary SummarizeNodes(const NodeList& nodes) {
  NodeSummarizer summarizer;
  for (const Node& node : nodes) summarizer.Add(node);
  return summarizer.Finish();
}

}  // namespace turnpike::upstream
