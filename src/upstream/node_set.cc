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
