#include "discovery/parts.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "base/courtesy.h"

namespace turnpike {

void DiscoverySink::PublishParts(const ServiceRef& service,
                                 std::vector<DiscoveredNodesConstSharedPtr> parts) {
  Publish(service, std::make_shared<const DiscoveredNodes>(discovery::MergeParts(parts)));
}

namespace discovery {

DiscoveredNodes MergeParts(const std::vector<DiscoveredNodesConstSharedPtr>& parts) {
  struct Run {
    const DiscoveredNode* begin;
    const DiscoveredNode* end;
  };
  std::vector<Run> runs;
  size_t total = 0;
  for (const DiscoveredNodesConstSharedPtr& p : parts) {
    if (p == nullptr || p->empty()) continue;
    runs.push_back({p->data(), p->data() + p->size()});
    total += p->size();
  }
  DiscoveredNodes out;
  out.reserve(total);
  // Runs by head (and place for equal heads), the smallest last: a small heap by hand would
  // do, but there are only as many runs as parts and most are taken whole at once.
  auto later = [](const Run& a, const Run& b) {  // true: `a` goes after `b`
    if (NodeKeyLess(*b.begin, *a.begin)) return true;
    if (NodeKeyLess(*a.begin, *b.begin)) return false;
    return a.begin > b.begin;  // equal heads: any fixed order (runs do not overlap in memory)
  };
  std::sort(runs.begin(), runs.end(), later);
  while (!runs.empty()) {
    Run& r = runs.back();
    if (runs.size() == 1) {
      out.insert(out.end(), r.begin, r.end);
      base::CourtesyPoint(static_cast<uint32_t>(r.end - r.begin));
      break;
    }
    // Up to the next head: nodes below it, and equal ones too (they come first either way).
    const DiscoveredNode& next = *runs[runs.size() - 2].begin;
    const DiscoveredNode* stop = std::upper_bound(r.begin, r.end, next, NodeKeyLess);
    out.insert(out.end(), r.begin, stop);
    base::CourtesyPoint(static_cast<uint32_t>(stop - r.begin));  // 10k nodes a change
    r.begin = stop;
    if (r.begin == r.end) {
      runs.pop_back();
      continue;
    }
    // r's head is now above next's: put r back in order (one place, unless runs interleave).
    Run moved = r;
    size_t k = runs.size() - 1;
    while (k > 0 && later(moved, runs[k - 1])) {
      runs[k] = runs[k - 1];
      --k;
    }
    runs[k] = moved;
  }
  return out;
}

}  // namespace discovery
}  // namespace turnpike
