#include "upstream/round_robin.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace turnpike::upstream {

void RoundRobinPicker::Rebuild(const NodeSet* previous) {
  // The node the old build would have picked next, when its turn went over its whole sorted
  // set: a new sorted set goes on from it by node (GoOn).
  const Node* due = nullptr;
  if (previous != nullptr && sorted_ && WholeSetInTurn(previous->nodes.size())) {
    due = &previous->nodes[classes_[0].next];  // in such a build, position i is node i
  }
  // Where each weight class's turn had got to (classes_ is in ascending weight order).
  carried_.clear();
  for (const WeightClass& c : classes_) carried_.push_back({c.weight, c.next - c.begin});
  classes_.clear();
  class_nodes_.clear();
  class_total_ = 0;
  identity_ = false;
  sorted_ = false;
  groups_built_ = false;
  if (set_ == nullptr || set_->nodes.empty()) {
    groups_.clear();
    groups_built_ = true;
    return;
  }

  const NodeSummary& summary = set_->summary;
  if (summary.summarized && summary.uniform) {
    // One priority, one weight (the usual discovered set): one weight class of every node in
    // index order, known from the summary without reading a node. The retry groups wait for
    // the first retry (BuildGroups).
    if (summary.weight > 0) {
      const auto n = static_cast<uint32_t>(set_->nodes.size());
      identity_ = true;
      sorted_ = summary.sorted;
      class_total_ = int64_t{summary.weight} * n;
      classes_.push_back(WeightClass{summary.weight, 0, 0, n, 0, 0});
      GoOn(due);
    }
    return;
  }

  BuildGroups();
  const NodeList& nodes = set_->nodes;
  sorted_ =
      summary.summarized ? summary.sorted : std::is_sorted(nodes.begin(), nodes.end(), NodeBefore);
  const auto weighted = std::find_if(groups_.begin(), groups_.end(), [](const auto& group) {
    return std::any_of(group.begin(), group.end(), [](const Slot& s) { return s.weight > 0; });
  });
  if (weighted == groups_.end()) return;
  // Weight classes of that group: node indexes sorted by (weight, index). A group's slots are
  // in index order, so when all weights are equal they already are.
  int first_weight = 0;
  bool one_weight = true;
  for (const Slot& s : *weighted) {
    if (s.weight <= 0) continue;
    if (class_nodes_.empty()) first_weight = s.weight;
    one_weight = one_weight && s.weight == first_weight;
    class_nodes_.push_back(s.index);
  }
  if (!one_weight) {
    std::stable_sort(class_nodes_.begin(), class_nodes_.end(), [&nodes](uint32_t a, uint32_t b) {
      return nodes[a].weight < nodes[b].weight;
    });
  }
  for (uint32_t i = 0; i < class_nodes_.size(); ++i) {
    const int64_t weight = nodes[class_nodes_[i]].weight;
    class_total_ += weight;
    if (classes_.empty() || classes_.back().weight != weight) {
      classes_.push_back(WeightClass{weight, 0, i, i, i, class_nodes_[i]});
    }
    classes_.back().end = i + 1;
  }
  GoOn(due);
}

bool RoundRobinPicker::WholeSetInTurn(size_t nodes) const {
  // One class of every node: its order is index order (a uniform build, or one group whose
  // nodes share a weight, put in index order and not sorted again).
  return classes_.size() == 1 && classes_[0].end == nodes;  // the first class begins at 0
}

void RoundRobinPicker::GoOn(const Node* due) {
  if (due == nullptr || !sorted_ || !WholeSetInTurn(set_->nodes.size())) {
    CarryTurns();
    return;
  }
  // Both sets ascend by NodeOrder: the turn goes on from `due`, or from the first node after
  // it when it left. By position instead, a change before the position (nodes joining or
  // leaving there) would shift the turn back onto nodes just served, some still busy (new
  // connections to them), or skip as many.
  const NodeList& nodes = set_->nodes;
  const auto at = std::lower_bound(nodes.begin(), nodes.end(), *due, NodeBefore);
  WeightClass& c = classes_[0];
  c.next = at == nodes.end() ? 0 : static_cast<uint32_t>(at - nodes.begin());
  c.node = ClassNode(c.next);
}

void RoundRobinPicker::CarryTurns() {
  // A class of a weight the old build had goes on from the same position in its turn (both
  // lists ascend by weight).
  auto from = carried_.begin();
  for (WeightClass& c : classes_) {
    while (from != carried_.end() && from->first < c.weight) ++from;
    if (from == carried_.end()) break;
    if (from->first != c.weight) continue;
    c.next = c.begin + from->second % (c.end - c.begin);
    c.node = ClassNode(c.next);
  }
}

void RoundRobinPicker::BuildGroups() {
  groups_built_ = true;
  const NodeList& nodes = set_->nodes;
  const auto n = static_cast<uint32_t>(nodes.size());
  const int priority = nodes[0].priority;
  if (std::all_of(nodes.begin(), nodes.end(),
                  [priority](const Node& node) { return node.priority == priority; })) {
    // One group (the usual case): no sort, and the group's storage is reused.
    groups_.resize(1);
    std::vector<Slot>& group = groups_[0];
    group.clear();
    group.reserve(n);
    for (uint32_t i = 0; i < n; ++i) group.push_back(Slot{i, std::max(nodes[i].weight, 0), 0});
    return;
  }
  groups_.clear();
  const std::vector<uint32_t> order = IndexesByPriority(nodes);
  for (size_t i = 0; i < order.size(); ++i) {
    const Node& node = nodes[order[i]];
    if (i == 0 || node.priority != nodes[order[i - 1]].priority) groups_.emplace_back();
    groups_.back().push_back(Slot{order[i], std::max(node.weight, 0), 0});
  }
}

uint32_t RoundRobinPicker::PickInGroup(std::vector<Slot>& group, const TriedSet& tried,
                                       bool zero_weight) {
  // Copies of the tried bits: the writes to `current` below could otherwise alias them and
  // force a reload per slot.
  const uint64_t low = tried.low_bits();
  const bool high = tried.has_high();
  // The best current weight is kept in a register rather than read back through `best`,
  // which would chain every iteration on a store-to-load round trip.
  Slot* best = nullptr;
  int64_t best_current = INT64_MIN;
  int64_t total = 0;
  for (Slot& s : group) {
    if ((s.weight > 0) == zero_weight) continue;
    if (s.index < 64 ? ((low >> s.index) & 1) != 0 : high && tried.Contains(s.index)) continue;
    const int weight = zero_weight ? 1 : s.weight;
    s.current += weight;
    total += weight;
    if (s.current > best_current) {
      best_current = s.current;
      best = &s;
    }
  }
  if (best == nullptr) return kNone;
  best->current -= total;
  return best->index;
}

uint32_t RoundRobinPicker::Pick(const PickRequest& request) {
  const TriedSet& tried = *request.tried;
  if (down_.count() != 0) {
    avoid_.Clear();
    avoid_.Merge(tried);
    avoid_.Merge(down_);
    const uint32_t index = PickAvoiding(avoid_);
    if (index != kNone) return index;
  }
  return PickAvoiding(tried);
}

uint32_t RoundRobinPicker::Ahead(uint32_t ahead) const {
  // With nodes down, Pick() walks the retry groups instead.
  if (classes_.size() != 1 || ahead == 0 || down_.count() != 0) return kNone;
  // One class: smooth weighted round robin takes its nodes in turn, from `next` on.
  const WeightClass& c = classes_[0];
  const uint32_t size = c.end - c.begin;
  uint64_t at = uint64_t{c.next} + ahead - 1;
  if (at >= c.end) at = c.begin + (at - c.begin) % size;
  return ClassNode(static_cast<uint32_t>(at));
}

uint32_t RoundRobinPicker::PickAvoiding(const TriedSet& tried) {
  if (tried.count() == 0 && !classes_.empty()) {
    WeightClass* best = nullptr;
    int64_t best_current = INT64_MIN;
    uint32_t best_index = 0;
    for (WeightClass& c : classes_) {
      c.current += c.weight;
      if (c.current > best_current || (c.current == best_current && c.node < best_index)) {
        best = &c;
        best_current = c.current;
        best_index = c.node;
      }
    }
    if (++best->next == best->end) {
      best->next = best->begin;
      best->current -= class_total_;
    }
    best->node = ClassNode(best->next);
    return best_index;
  }
  if (!groups_built_) BuildGroups();
  for (bool zero_weight : {false, true}) {
    for (std::vector<Slot>& group : groups_) {
      const uint32_t index = PickInGroup(group, tried, zero_weight);
      if (index != kNone) return index;
    }
  }
  return kNone;
}

}  // namespace turnpike::upstream
