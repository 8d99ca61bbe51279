// NodeSet: an immutable snapshot of the nodes of one upstream.
//
// Producers (static config, discovery::Directory) build a new NodeSet whenever
// the content changes and never mutate a published one, so a worker detects a change by
// comparing pointers. Shared read-only across threads.
//
// A Node is made to be cheap to copy and to free: under node churn the control thread builds
// a set of 10k nodes ten times a second, mostly copies of the previous set's nodes, and frees
// the replaced one. Its texts are inline (NodeText: no heap for IP literals, IPv4 or IPv6,
// with their ports) and its address is a sockaddr_in6-sized union, not a sockaddr_storage:
// 192 bytes a node instead of ~240, no allocation. The worker reads the texts and the address in
// place, per request (no pointer to follow).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <cstring>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace turnpike::upstream {

// A node's text (host, ip_text, host_header): inline up to kInline bytes, on the heap beyond
// (a long domain name only). Reads as a std::string_view (one compare and branch: the request
// path's cost of a text). Copying an inline text is a 48-byte copy and destroying one frees
// nothing. Not NUL-terminated. Thread rules: as a std::string.
class NodeText {
 public:
  static constexpr size_t kInline = 47;  // an IPv6 literal in brackets with a port

  NodeText() = default;
  explicit NodeText(std::string_view s) { Init(s); }
  explicit NodeText(const char* s) : NodeText(std::string_view(s)) {}
  NodeText(const NodeText& o) {
    if (o.heap()) {
      Init(o.view());
    } else {
      std::memcpy(static_cast<void*>(this), &o, sizeof(*this));
    }
  }
  NodeText(NodeText&& o) noexcept {
    std::memcpy(static_cast<void*>(this), &o, sizeof(*this));
    o.tag_ = 0;
  }
  NodeText& operator=(const NodeText& o) {
    if (this == &o) return *this;
    if (!heap() && !o.heap()) {
      std::memcpy(static_cast<void*>(this), &o, sizeof(*this));
    } else {
      assign(o.view());
    }
    return *this;
  }
  NodeText& operator=(NodeText&& o) noexcept {
    if (this != &o) {
      Free();
      std::memcpy(static_cast<void*>(this), &o, sizeof(*this));
      o.tag_ = 0;
    }
    return *this;
  }
  NodeText& operator=(std::string_view s) {
    assign(s);
    return *this;
  }
  NodeText& operator=(const char* s) { return *this = std::string_view(s); }
  NodeText& operator=(const std::string& s) { return *this = std::string_view(s); }
  ~NodeText() { Free(); }

  void assign(std::string_view s) {
    Free();
    Init(s);
  }
  std::string_view view() const {
    if (!heap()) return {buf_, tag_};
    Heap h;
    std::memcpy(&h, buf_, sizeof(h));
    return {h.data, h.size};
  }
  operator std::string_view() const { return view(); }  // NOLINT(google-explicit-constructor)
  std::string str() const { return std::string(view()); }
  const char* data() const { return view().data(); }
  size_t size() const { return view().size(); }
  bool empty() const { return tag_ == 0; }
  bool heap() const { return tag_ == kHeap; }

  friend bool operator==(const NodeText& a, const NodeText& b) { return a.view() == b.view(); }
  friend bool operator==(const NodeText& a, std::string_view b) { return a.view() == b; }
  friend std::ostream& operator<<(std::ostream& os, const NodeText& t);

 private:
  static constexpr uint8_t kHeap = 0xff;
  struct Heap {
    char* data;
    size_t size;
  };
  static_assert(sizeof(Heap) <= kInline);

  void Init(std::string_view s);  // REQUIRES: nothing owned
  void Free() {
    if (heap()) FreeHeap();
  }
  void FreeHeap();

  char buf_[kInline] = {};
  uint8_t tag_ = 0;  // the inline size, or kHeap
};
static_assert(sizeof(NodeText) == 48);

// A node's socket address: IPv4 or IPv6 (sockaddr_storage's 128 bytes are not needed).
union NodeAddr {
  sockaddr sa;
  sockaddr_in v4;
  sockaddr_in6 v6;
  sa_family_t family() const { return sa.sa_family; }
};

struct Node {
  NodeText host;  // as configured (domain or IP literal, IPv6 without brackets)
  uint16_t port = 0;
  int weight = 1;
  int priority = 0;
  NodeAddr addr{};  // resolved address (filled by the producer)
  socklen_t addr_len = 0;
  // `addr`'s IP as text (IPv6 without brackets). Whoever fills `addr` fills this too, so
  // that requests never format it ($upstream_addr, $balancer_ip).
  NodeText ip_text;
  NodeText host_header;  // `host[:port]` for pass_host=node (port omitted when default)
};

class ChashRings;  // upstream/chash.h

// What pickers need to know of a whole set, so that a worker switching to a new set reads
// this instead of every node (10k nodes are ~10k cold cache lines on the worker). Computed by
// the producer when it builds the set (SummarizeNodes), like NodeSet::chash; a set published
// without it (`summarized` false: sets built by hand, as in tests) is read node by node.
struct NodeSummary {
  bool summarized = false;
  // Every node has the same priority and the same `weight` (the usual discovered set). Only
  // meaningful when summarized.
  bool uniform = false;
  // The nodes ascend by NodeOrder (host, then port), as discovered lists come (the providers
  // sort them; discovery::Directory keeps their order). A picker switching between two such
  // sets finds where its turn had got to by node instead of by position (RoundRobinPicker).
  // Only meaningful when summarized.
  bool sorted = false;
  int weight = 0;
};

// The order of sorted sets: host text byte by byte, then port. Negative, 0 or positive.
inline int NodeOrder(const Node& a, const Node& b) {
  if (const int c = a.host.view().compare(b.host.view()); c != 0) return c;
  return int{a.port} - int{b.port};
}

// The same summary taken node by node, for a producer that already walks the nodes while it
// puts them (discovery/directory.cc): Add every node in order, then Finish. A node added must
// stay where it is (and unchanged) until the next Add: it is compared with the next one.
class NodeSummarizer {
 public:
  void Add(const Node& node) {
    if (count_++ == 0) {
      weight_ = node.weight;
      priority_ = node.priority;
    } else {
      uniform_ = uniform_ && node.weight == weight_ && node.priority == priority_;
      sorted_ = sorted_ && NodeOrder(*last_, node) <= 0;
    }
    last_ = &node;
  }
  NodeSummary Finish() const {
    NodeSummary summary;
    summary.summarized = true;
    summary.uniform = count_ != 0 && uniform_;
    if (summary.uniform) summary.weight = weight_;
    summary.sorted = sorted_;
    return summary;
  }

 private:
  size_t count_ = 0;
  const Node* last_ = nullptr;
  bool uniform_ = true;
  bool sorted_ = true;
  int weight_ = 0;
  int priority_ = 0;
};

// Producers, before publishing: the summary of `nodes` (upstream/node_summary.cc). O(nodes).
NodeSummary SummarizeNodes(const std::vector<Node>& nodes);

struct NodeSet {
  std::vector<Node> nodes;
  // Of `nodes`, filled by the producer before it publishes the set; not part of the set's
  // value (SameNodes ignores it: it derives from the nodes).
  NodeSummary summary = {};
  // The consistent-hash rings of `nodes`, when the set is published for a chash upstream
  // (NodeSetSlot::chash()): built by the producer before it publishes the set, then shared,
  // read-only, by every worker's picker (upstream/chash.h). Null otherwise. Not part of the
  // set's value (SameNodes ignores it: it derives from the nodes).
  std::shared_ptr<const ChashRings> chash = nullptr;
};

using NodeSetConstSharedPtr = std::shared_ptr<const NodeSet>;

// True when both nodes have the same host, port, weight, priority and address (the texts
// derive from them).
bool SameNode(const Node& a, const Node& b);
// True when both sets have the same nodes (SameNode) in order.
bool SameNodes(const NodeSet& a, const NodeSet& b);

}  // namespace turnpike::upstream
