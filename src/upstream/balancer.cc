#include "upstream/balancer.h"

#include <algorithm>
#include <numeric>

#include "upstream/chash.h"
#include "upstream/ewma.h"
#include "upstream/least_conn.h"
#include "upstream/round_robin.h"

namespace turnpike::upstream {

bool TriedSet::Contains(uint32_t i) const {
  if (i < 64) return (bits_ >> i) & 1u;
  return std::find(overflow_.begin(), overflow_.end(), i) != overflow_.end();
}

void TriedSet::Add(uint32_t i) {
  if (Contains(i)) return;
  if (i < 64) {
    bits_ |= uint64_t{1} << i;
  } else {
    overflow_.push_back(i);
  }
  ++count_;
}

void TriedSet::Clear() {
  bits_ = 0;
  overflow_.clear();  // keeps the capacity for the next request
  count_ = 0;
}

void TriedSet::Merge(const TriedSet& other) {
  for (uint32_t i = 0; i < 64; ++i) {
    if ((other.bits_ >> i) & 1u) Add(i);
  }
  for (uint32_t i : other.overflow_) Add(i);
}

std::string_view BalancerTypeName(BalancerType type) {
  switch (type) {
    case BalancerType::kChash:
      return "chash";
    case BalancerType::kLeastConn:
      return "least_conn";
    case BalancerType::kEwma:
      return "ewma";
    case BalancerType::kRoundRobin:
      break;
  }
  return "roundrobin";
}

std::unique_ptr<Picker> NewPicker(BalancerType type) {
  switch (type) {
    case BalancerType::kChash:
      return std::make_unique<ChashPicker>();
    case BalancerType::kLeastConn:
      return std::make_unique<LeastConnPicker>();
    case BalancerType::kEwma:
      return std::make_unique<EwmaPicker>();
    case BalancerType::kRoundRobin:
      break;
  }
  return std::make_unique<RoundRobinPicker>();
}

std::vector<uint32_t> IndexesByPriority(const NodeList& nodes) {
  std::vector<uint32_t> order(nodes.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&nodes](uint32_t a, uint32_t b) {
    return nodes[a].priority > nodes[b].priority;
  });
  return order;
}

uint32_t PickUntried(const NodeSet& set, const TriedSet& tried) {
  uint32_t best = Picker::kNone;
  for (uint32_t i = 0; i < set.nodes.size(); ++i) {
    if (tried.Contains(i)) continue;
    if (best == Picker::kNone) {
      best = i;
      continue;
    }
    const Node& n = set.nodes[i];
    const Node& b = set.nodes[best];
    bool better_weight = n.weight > 0 && b.weight <= 0;
    bool same_weight_class = (n.weight > 0) == (b.weight > 0);
    if (better_weight || (same_weight_class && n.priority > b.priority)) best = i;
  }
  return best;
}

}  // namespace turnpike::upstream
