#include "upstream/ewma.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace turnpike::upstream {

void EwmaPicker::Rebuild(const NodeSet* /*previous*/) {
  zero_weight_.clear();
  const NodeList& nodes = set_->nodes;
  stats_.assign(nodes.size(), NodeStat{});
  const NodeSummary& summary = set_->summary;
  if (summary.summarized && summary.uniform) {
    // One priority, one weight, known without reading a node: one group of every node in
    // index order (or all of weight 0). Storage is reused.
    std::vector<uint32_t>* all = &zero_weight_;
    if (summary.weight > 0) {
      groups_.resize(1);
      all = &groups_[0];
    } else {
      groups_.clear();
    }
    all->resize(nodes.size());
    std::iota(all->begin(), all->end(), 0u);
    return;
  }
  groups_.clear();
  const std::vector<uint32_t> order = IndexesByPriority(nodes);
  for (size_t i = 0; i < order.size(); ++i) {
    const Node& node = nodes[order[i]];
    if (i == 0 || node.priority != nodes[order[i - 1]].priority) groups_.emplace_back();
    if (node.weight > 0) {
      groups_.back().push_back(order[i]);
    } else {
      zero_weight_.push_back(order[i]);
    }
  }
  std::erase_if(groups_, [](const std::vector<uint32_t>& g) { return g.empty(); });
}

double EwmaPicker::Score(uint32_t index, uint64_t now_ms) const {
  const NodeStat& s = stats_[index];
  if (!s.touched) return 0;
  const double idle = now_ms > s.touched_ms ? static_cast<double>(now_ms - s.touched_ms) : 0;
  return s.ewma * std::exp(-idle / kDecayMs);
}

void EwmaPicker::OnAttemptEnd(uint32_t index, uint64_t now_ms, uint64_t elapsed_ms, bool final) {
  if (!final || index >= stats_.size()) return;
  NodeStat& s = stats_[index];
  const double rtt = static_cast<double>(elapsed_ms) / 1000;
  if (!s.touched) {
    // APISIX's first update decays a 0 from the epoch: the average becomes the sample.
    s.ewma = rtt;
  } else {
    const double idle = now_ms > s.touched_ms ? static_cast<double>(now_ms - s.touched_ms) : 0;
    const double w = std::exp(-idle / kDecayMs);
    s.ewma = s.ewma * w + rtt * (1.0 - w);
  }
  s.touched = true;
  s.touched_ms = now_ms;
}

uint32_t EwmaPicker::PickAvoiding(const TriedSet& avoid, uint64_t now_ms) {
  for (const std::vector<uint32_t>& group : groups_) {
    const auto size = static_cast<uint32_t>(group.size());
    if (avoid.count() == 0) {  // a first attempt: draw from the whole group
      if (size == 1) return group[0];
      const uint32_t a = Below(size);
      uint32_t b = Below(size - 1);
      if (b >= a) ++b;
      return Better(group[a], group[b], now_ms);
    }
    uint32_t untried = 0;
    for (uint32_t index : group) untried += avoid.Contains(index) ? 0 : 1;
    if (untried == 0) continue;
    // The a-th and b-th untried nodes (a != b) of the group.
    const uint32_t a = Below(untried);
    uint32_t b = a;
    if (untried > 1) {
      b = Below(untried - 1);
      if (b >= a) ++b;
    }
    uint32_t first = kNone;
    uint32_t second = kNone;
    uint32_t rank = 0;
    for (uint32_t index : group) {
      if (avoid.Contains(index)) continue;
      if (rank == a) first = index;
      if (rank == b) second = index;
      ++rank;
    }
    return Better(first, second, now_ms);
  }
  for (uint32_t index : zero_weight_) {
    if (!avoid.Contains(index)) return index;
  }
  return kNone;
}

uint32_t EwmaPicker::Pick(const PickRequest& request) {
  if (set_ == nullptr) return kNone;
  const TriedSet& tried = *request.tried;
  if (down_.count() != 0) {
    avoid_.Clear();
    avoid_.Merge(tried);
    avoid_.Merge(down_);
    const uint32_t index = PickAvoiding(avoid_, request.now_ms);
    if (index != kNone) return index;
  }
  return PickAvoiding(tried, request.now_ms);
}

}  // namespace turnpike::upstream
