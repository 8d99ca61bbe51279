#include "upstream/least_conn.h"

#include <algorithm>
#include <numeric>

namespace turnpike::upstream {

void LeastConnPicker::Rebuild(const NodeSet* /*previous*/) {
  zero_weight_.clear();
  picks_ = 0;
  const NodeSummary& summary = set_->summary;
  if (summary.summarized && summary.uniform) {
    // One priority, one weight (the usual discovered set), known without reading a node: no
    // count and no pick yet, so every key is equal and index order is already the heap the
    // node-by-node build's sift-ups leave. Storage is reused.
    const auto n = static_cast<uint32_t>(set_->nodes.size());
    if (summary.weight > 0) {
      heaps_.resize(1);
      std::vector<uint32_t>& heap = heaps_[0];
      heap.resize(n);
      state_.resize(n);
      const auto weight = static_cast<uint64_t>(summary.weight);
      for (uint32_t i = 0; i < n; ++i) {
        heap[i] = i;
        state_[i] = NodeState{weight, 0, 0, i, 0};
      }
    } else {
      heaps_.clear();
      state_.assign(n, NodeState{});
      zero_weight_.resize(n);
      std::iota(zero_weight_.begin(), zero_weight_.end(), 0u);
    }
    return;
  }
  heaps_.clear();
  const NodeList& nodes = set_->nodes;
  state_.assign(nodes.size(), NodeState{});
  const std::vector<uint32_t> order = IndexesByPriority(nodes);
  for (size_t i = 0; i < order.size(); ++i) {
    const uint32_t index = order[i];
    const Node& node = nodes[index];
    if (i == 0 || node.priority != nodes[order[i - 1]].priority) heaps_.emplace_back();
    if (node.weight <= 0) {
      zero_weight_.push_back(index);
      continue;
    }
    NodeState& s = state_[index];
    s.weight = static_cast<uint64_t>(node.weight);
    s.group = static_cast<uint32_t>(heaps_.size() - 1);
    s.pos = static_cast<uint32_t>(heaps_.back().size());
    heaps_.back().push_back(index);
    SiftUp(heaps_.back(), s.pos);
  }
  std::erase_if(heaps_, [](const std::vector<uint32_t>& h) { return h.empty(); });
  for (uint32_t g = 0; g < heaps_.size(); ++g) {
    for (uint32_t index : heaps_[g]) state_[index].group = g;
  }
}

void LeastConnPicker::SiftUp(std::vector<uint32_t>& heap, uint32_t pos) {
  const uint32_t item = heap[pos];
  while (pos > 0) {
    const uint32_t parent = (pos - 1) / 2;
    if (!Before(item, heap[parent])) break;
    heap[pos] = heap[parent];
    state_[heap[pos]].pos = pos;
    pos = parent;
  }
  heap[pos] = item;
  state_[item].pos = pos;
}

void LeastConnPicker::SiftDown(std::vector<uint32_t>& heap, uint32_t pos) {
  const auto n = static_cast<uint32_t>(heap.size());
  const uint32_t item = heap[pos];
  for (;;) {
    uint32_t child = 2 * pos + 1;
    if (child >= n) break;
    if (child + 1 < n && Before(heap[child + 1], heap[child])) ++child;
    if (!Before(heap[child], item)) break;
    heap[pos] = heap[child];
    state_[heap[pos]].pos = pos;
    pos = child;
  }
  heap[pos] = item;
  state_[item].pos = pos;
}

void LeastConnPicker::Take(uint32_t index) {
  NodeState& s = state_[index];
  ++s.active;
  s.picked = ++picks_;
  if (s.weight != 0) SiftDown(heaps_[s.group], s.pos);
}

void LeastConnPicker::OnAttemptEnd(uint32_t index, uint64_t /*now_ms*/, uint64_t /*elapsed_ms*/,
                                   bool /*final*/) {
  if (index >= state_.size()) return;
  NodeState& s = state_[index];
  if (s.active == 0) return;
  --s.active;
  if (s.weight != 0) SiftUp(heaps_[s.group], s.pos);
}

uint32_t LeastConnPicker::PickAvoiding(const TriedSet& avoid) {
  for (const std::vector<uint32_t>& heap : heaps_) {
    if (avoid.count() == 0) return heap[0];  // a first attempt: the top
    uint32_t best = kNone;
    for (uint32_t index : heap) {
      if (avoid.Contains(index)) continue;
      if (best == kNone || Before(index, best)) best = index;
    }
    if (best != kNone) return best;
  }
  for (uint32_t index : zero_weight_) {
    if (!avoid.Contains(index)) return index;
  }
  return kNone;
}

uint32_t LeastConnPicker::Pick(const PickRequest& request) {
  if (set_ == nullptr) return kNone;
  const TriedSet& tried = *request.tried;
  uint32_t index = kNone;
  if (down_.count() != 0) {
    avoid_.Clear();
    avoid_.Merge(tried);
    avoid_.Merge(down_);
    index = PickAvoiding(avoid_);
  }
  if (index == kNone) index = PickAvoiding(tried);
  if (index != kNone) Take(index);
  return index;
}

}  // namespace turnpike::upstream
