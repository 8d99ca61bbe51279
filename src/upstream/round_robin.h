// Weighted round robin over a NodeSet (smooth weighted round robin, as nginx's upstream).
//
// A Picker (upstream/balancer.h): Build() runs when the worker first sees a NodeSet pointer
// (off the per-request path), Pick() runs per request. A picker belongs to one worker; not
// thread-safe.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "upstream/balancer.h"
#include "upstream/node_set.h"

namespace turnpike::upstream {

class RoundRobinPicker final : public Picker {
 public:
  RoundRobinPicker() : Picker(BalancerType::kRoundRobin) {}
  using Picker::Pick;

  // Worker, hot path. Returns the index of the next node to use that is not in `tried`, or
  // kNone when every node was tried (or the set is empty, or Build() was never called).
  // Priority groups: only the highest-priority group is used until all its nodes are tried,
  // then the next lower group. Weight 0 nodes are picked only when nothing else in reach is
  // left, that is when no untried node with weight > 0 remains in any group; they are then
  // taken from the highest group first, in turn (as if of weight 1). No allocation.
  //
  // Cost: a first attempt (empty `tried`) is O(distinct weights in the group); a retry is
  // O(nodes), as every pick in nginx. The first retry after a Build() from a summarized
  // uniform set (below) builds the retry groups first: O(nodes) more, no allocation once the
  // picker has held a set as large.
  //
  // Nodes marked down (set_down) are skipped like tried ones, at a retry's cost; when that
  // leaves nothing, the down nodes are used too (fail-open).
  uint32_t Pick(const PickRequest& request) override;
  // Known when one weight class holds every weighted node of the group in use (the usual
  // discovered set, or any group of equal weights): its picks go in turn. O(1).
  uint32_t Ahead(uint32_t ahead) const override;

 private:
  // Build(): O(1) for a set whose summary (NodeSet::summary, filled by the producer) says
  // all nodes share one priority and one weight (the usual discovered set): no node is read,
  // only the set's header and summary, so a worker switching to a new 10k-node set touches a
  // few cache lines instead of every node; the retry groups are built on the first retry.
  // Otherwise O(nodes) when all nodes share one priority and all weighted nodes of the group
  // one weight, else O(nodes log nodes); no allocation in the first case once the picker has
  // held a set as large.
  //
  // A rebuilt picker (the set changed: a discovery answer, a DNS change) does not start its
  // turn over, so frequent republishes (node churn) still spread requests over the whole set
  // instead of sending each build's first picks to its first nodes. When the old and the new
  // build each take every node in turn and both sets are sorted (NodeSummary::sorted: every
  // discovered set), the turn goes on from the node that was due next, found by a binary
  // search (O(log nodes) node reads), or from the first node after it if it left: nodes that
  // join or leave before it neither send the turn back over nodes just served nor make it
  // skip any. Otherwise each weight class that the old build also had goes on from the same
  // position (modulo the class's new size). The smooth weights of the classes start again
  // from 0; a first Build() gives nginx's sequence.
  void Rebuild(const NodeSet* previous) override;

  struct Slot {
    uint32_t index;
    int weight;
    int64_t current;
  };

  // Smooth weighted round robin over the slots of `group` that are not in `tried` and have
  // weight > 0 (or, with `zero_weight`, weight <= 0, each counted as 1); kNone if none.
  static uint32_t PickInGroup(std::vector<Slot>& group, const TriedSet& tried, bool zero_weight);
  uint32_t PickAvoiding(const TriedSet& tried);
  // groups_ from set_'s nodes (O(nodes), reads every node).
  void BuildGroups();
  // Rebuild(): the classes of weights the old build had go on from their positions.
  void CarryTurns();
  // Rebuild(): from `due` (a node of the old set, or null) when both builds take their whole
  // sorted set in turn, else CarryTurns().
  void GoOn(const Node* due);
  // One weight class of all `nodes` nodes, in index order.
  bool WholeSetInTurn(size_t nodes) const;
  static bool NodeBefore(const Node& a, const Node& b) { return NodeOrder(a, b) < 0; }
  // The node at position `i` of the weight classes' order.
  uint32_t ClassNode(uint32_t i) const { return identity_ ? i : class_nodes_[i]; }

  std::vector<std::vector<Slot>> groups_;  // by priority, highest first
  bool groups_built_ = true;               // false: groups_ waits for BuildGroups()
  // First attempts run smooth WRR on the first group with a node of weight > 0, with its
  // nodes grouped by weight. Nodes of equal weight are always chosen in turn (index order),
  // so each weight class acts as one contender whose current weight is that of its next
  // node: the class's current grows by its weight per pick and drops by the group's total
  // weight only when its turn wraps around. That yields nginx's exact sequence (ties going
  // to the lowest node index) in O(classes) instead of O(nodes). Retries use `groups_`.
  struct WeightClass {
    int64_t weight;
    int64_t current;
    uint32_t begin;  // its node indexes are class_nodes_[begin, end), ascending
    uint32_t end;
    uint32_t next;  // position of the next node in turn, in [begin, end)
    uint32_t node;  // class_nodes_[next], kept here to spare a load per class and pick
  };
  std::vector<WeightClass> classes_;   // empty when no node has weight > 0
  std::vector<uint32_t> class_nodes_;  // empty when identity_
  // One class of every node in index order (a summarized uniform set): position i is node i,
  // so class_nodes_ is not filled.
  bool identity_ = false;
  bool sorted_ = false;  // the set ascends by NodeOrder (summary.sorted, or checked node by node)
  int64_t class_total_ = 0;
  TriedSet avoid_;  // tried + down, when some node is down (capacity reused)
  std::vector<std::pair<int64_t, uint32_t>> carried_;  // Rebuild(): (weight, position) per class
};

}  // namespace turnpike::upstream
