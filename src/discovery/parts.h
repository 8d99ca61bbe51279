// Node lists in sorted parts (DiscoverySink::PublishParts): the merge that turns them into one
// list, shared by the sink's default and the Directory's fallback.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/courtesy.h"
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

// A run of sorted elements: [begin, end).
template <typename T>
struct SortedRun {
  const T* begin;
  const T* end;
};

// Merges `runs` (each sorted by `less`, none empty) in `less` order: emit(from, to) gets the
// stretches of one run to take next, in order. A run of the smallest head is taken up to the
// next run's head at once (a binary search), so runs that do not interleave cost a search each
// and one stretch; interleaved ones merge correctly, a few elements per search. Equal elements
// keep the runs' order (by head, then by address).
template <typename T, typename Less, typename Emit>
void MergeSortedRuns(std::vector<SortedRun<T>> runs, Less less, Emit emit) {
  // Runs by head, the smallest last: a small heap by hand would do, but there are only as many
  // runs as parts and most are taken whole at once.
  auto later = [&less](const SortedRun<T>& a, const SortedRun<T>& b) {  // `a` goes after `b`
    if (less(*b.begin, *a.begin)) return true;
    if (less(*a.begin, *b.begin)) return false;
    return a.begin > b.begin;  // equal heads: any fixed order (runs do not overlap in memory)
  };
  std::sort(runs.begin(), runs.end(), later);
  while (!runs.empty()) {
    SortedRun<T>& r = runs.back();
    if (runs.size() == 1) {
      emit(r.begin, r.end);
      base::CourtesyPoint(static_cast<uint32_t>(r.end - r.begin));
      break;
    }
    // Up to the next head: elements below it, and equal ones too (they come first either way).
    const T* stop = std::upper_bound(r.begin, r.end, *runs[runs.size() - 2].begin, less);
    emit(r.begin, stop);
    base::CourtesyPoint(static_cast<uint32_t>(stop - r.begin));  // 10k nodes a change
    r.begin = stop;
    if (r.begin == r.end) {
      runs.pop_back();
      continue;
    }
    // r's head is now above the next's: put r back in order (one place, unless runs
    // interleave).
    SortedRun<T> moved = r;
    size_t k = runs.size() - 1;
    while (k > 0 && later(moved, runs[k - 1])) {
      runs[k] = runs[k - 1];
      --k;
    }
    runs[k] = moved;
  }
}

// The nodes of `parts` (each sorted by NodeKeyLess; null ones skipped), merged in that order.
// MergeSortedRuns: parts that do not interleave cost a search and a copy each.
DiscoveredNodes MergeParts(const std::vector<DiscoveredNodesConstSharedPtr>& parts);

}  // namespace turnpike::discovery
