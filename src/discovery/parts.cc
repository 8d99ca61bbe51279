#include "discovery/parts.h"

#include <memory>
#include <utility>

namespace turnpike {

void DiscoverySink::PublishParts(const ServiceRef& service,
                                 std::vector<DiscoveredNodesConstSharedPtr> parts) {
  Publish(service, std::make_shared<const DiscoveredNodes>(discovery::MergeParts(parts)));
}

namespace discovery {

DiscoveredNodes MergeParts(const std::vector<DiscoveredNodesConstSharedPtr>& parts) {
  std::vector<SortedRun<DiscoveredNode>> runs;
  size_t total = 0;
  for (const DiscoveredNodesConstSharedPtr& p : parts) {
    if (p == nullptr || p->empty()) continue;
    runs.push_back({p->data(), p->data() + p->size()});
    total += p->size();
  }
  DiscoveredNodes out;
  out.reserve(total);
  MergeSortedRuns(std::move(runs), NodeKeyLess,
                  [&out](const DiscoveredNode* from, const DiscoveredNode* to) {
                    out.insert(out.end(), from, to);
                  });
  return out;
}

}  // namespace discovery
}  // namespace turnpike
