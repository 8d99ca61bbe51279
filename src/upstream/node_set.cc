#include "upstream/node_set.h"

#include <algorithm>
#include <cstring>
#include <ostream>

#include "upstream/node_set_slot.h"

namespace turnpike::upstream {

void NodeText::Init(std::string_view s) {
  if (s.size() <= kInline) {
    if (!s.empty()) std::memcpy(buf_, s.data(), s.size());
    tag_ = static_cast<uint8_t>(s.size());
    return;
  }
  Heap h{new char[s.size()], s.size()};
  std::memcpy(h.data, s.data(), s.size());
  std::memcpy(buf_, &h, sizeof(h));
  tag_ = kHeap;
}

void NodeText::FreeHeap() {
  Heap h;
  std::memcpy(&h, buf_, sizeof(h));
  delete[] h.data;
  tag_ = 0;
}

std::ostream& operator<<(std::ostream& os, const NodeText& t) { return os << t.view(); }

NodeList::NodeList(std::vector<Node> nodes) {
  if (nodes.empty()) return;
  auto block = std::make_shared<NodeBlock>();
  block->nodes = std::move(nodes);
  Append(block);
}

Node& NodeList::Own(const Node& node) {
  if (own_ == nullptr) {
    own_ = std::make_shared<std::deque<Node>>();
    pushed_.push_back(own_);
  }
  own_->push_back(node);
  return own_->back();
}

void NodeList::push_back(const Node& node) {
  const Node& copy = Own(node);  // before at_ grows: `node` may be one of this list's
  at_.push_back(&copy);
}

Node& NodeList::Mutable(size_t i) {
  Node& copy = Own(*at_.at(i));
  at_[i] = &copy;
  return copy;
}

void NodeList::Append(const NodeBlockConstSharedPtr& block, size_t from, size_t to) {
  if (from >= to) return;
  if (blocks_.empty() || blocks_.back() != block) {
    // Runs of one block come together; a block met again (runs that interleave) is kept once.
    if (std::find(blocks_.begin(), blocks_.end(), block) == blocks_.end()) {
      blocks_.push_back(block);
    }
  }
  const Node* first = block->nodes.data();
  for (size_t i = from; i < to; ++i) at_.push_back(first + i);
}

NodeList NodeList::Assemble(std::vector<const Node*> at,
                            std::vector<NodeBlockConstSharedPtr> blocks) {
  NodeList list;
  list.at_ = std::move(at);
  list.blocks_ = std::move(blocks);
  return list;
}

std::vector<Node> NodeList::TakeSoleBlock() {
  if (!pushed_.empty() || blocks_.size() != 1 || blocks_.front().use_count() != 1 ||
      at_.size() != blocks_.front()->nodes.size()) {
    return {};
  }
  // Made by NodeList(std::vector<Node>) or a producer's make_shared<NodeBlock>: not a const
  // object, and nobody else can reach it.
  std::vector<Node> nodes = std::move(const_cast<NodeBlock&>(*blocks_.front()).nodes);
  blocks_.clear();
  at_.clear();
  return nodes;
}

bool SameNode(const Node& a, const Node& b) {
  return a.port == b.port && a.weight == b.weight && a.priority == b.priority &&
         a.addr_len == b.addr_len &&
         std::memcmp(&a.addr, &b.addr, std::min<size_t>(a.addr_len, sizeof(a.addr))) == 0 &&
         a.host == b.host;
}

bool SameNodes(const NodeSet& a, const NodeSet& b) {
  if (&a == &b) return true;
  if (a.nodes.size() != b.nodes.size()) return false;
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    if (!SameNode(a.nodes[i], b.nodes[i])) return false;
  }
  return true;
}

const NodeSetConstSharedPtr& EmptyNodeSet() {
  static const NodeSetConstSharedPtr* empty =
      new NodeSetConstSharedPtr(std::make_shared<NodeSet>());
  return *empty;
}

}  // namespace turnpike::upstream
