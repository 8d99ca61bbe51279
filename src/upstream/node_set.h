// NodeSet: an immutable snapshot of the nodes of one upstream.
//
// Producers (static config, discovery::Directory) build a new NodeSet whenever
// the content changes and never mutate a published one, so a worker detects a change by
// comparing pointers. Shared read-only across threads.
//
// A Node is made to be cheap to copy and to free: a producer that gets a whole new list
// (discovery::Directory, for providers that publish one list) builds a set of 10k nodes, mostly
// copies of the previous set's nodes, and frees the replaced one. Producers that get their
// nodes in parts share them instead (NodeList, NodeBlock): sets point into blocks of nodes. Its
// texts are inline (NodeText: no heap for IP literals, IPv4 or IPv6, with their ports) and its
// address is a sockaddr_in6-sized union, not a sockaddr_storage: 192 bytes a node instead of ~240,
// no allocation. The worker reads the texts and the address in place, per request (one pointer to
// follow: the set's NodeList).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <iosfwd>
#include <iterator>
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

// Nodes made once and shared, read-only, by every list that points into them (NodeList).
struct NodeBlock {
  std::vector<Node> nodes;
};
using NodeBlockConstSharedPtr = std::shared_ptr<const NodeBlock>;

// The nodes of a set, in order: a pointer per node into blocks the list keeps alive. Two sets
// that share nodes share their blocks, so a producer that builds a set from the last one and a
// few new nodes (discovery::Directory, under node churn: 250 new nodes of 10k) writes the new
// nodes and a pointer for each node, never the other nodes' 192 bytes; whoever releases the
// last set holding a block frees it. Reads as a const std::vector<Node>: `nodes[i]` is one more
// load (the pointer) on the request path.
//
// Building: Append() shares a node of a block (keeping the block), push_back() copies a node
// into the list's own storage (tests and small static sets), or a whole vector becomes one
// block (the constructor). Immutable once its set is published. Copies share the blocks (and
// the nodes pushed so far: a copy pushes into storage of its own). Thread rules: as a
// std::vector.
class NodeList {
 public:
  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = Node;
    using difference_type = std::ptrdiff_t;
    using pointer = const Node*;
    using reference = const Node&;
    const_iterator() = default;
    explicit const_iterator(const Node* const* at) : at_(at) {}
    reference operator*() const { return **at_; }
    pointer operator->() const { return *at_; }
    reference operator[](difference_type n) const { return *at_[n]; }
    const_iterator& operator++() {
      ++at_;
      return *this;
    }
    const_iterator operator++(int) { return const_iterator(at_++); }
    const_iterator& operator--() {
      --at_;
      return *this;
    }
    const_iterator operator--(int) { return const_iterator(at_--); }
    const_iterator& operator+=(difference_type n) {
      at_ += n;
      return *this;
    }
    const_iterator& operator-=(difference_type n) {
      at_ -= n;
      return *this;
    }
    friend const_iterator operator+(const_iterator it, difference_type n) { return it += n; }
    friend const_iterator operator+(difference_type n, const_iterator it) { return it += n; }
    friend const_iterator operator-(const_iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(const_iterator a, const_iterator b) { return a.at_ - b.at_; }
    friend auto operator<=>(const_iterator a, const_iterator b) = default;

   private:
    const Node* const* at_ = nullptr;
  };
  using value_type = Node;
  using iterator = const_iterator;

  NodeList() = default;
  // One block of `nodes`.
  explicit NodeList(std::vector<Node> nodes);
  NodeList(std::initializer_list<Node> nodes) : NodeList(std::vector<Node>(nodes)) {}
  NodeList(const NodeList& o) : at_(o.at_), blocks_(o.blocks_), pushed_(o.pushed_) {}
  NodeList& operator=(const NodeList& o) {
    if (this != &o) {
      at_ = o.at_;
      blocks_ = o.blocks_;
      pushed_ = o.pushed_;
      own_ = nullptr;  // the copy pushes into storage of its own
    }
    return *this;
  }
  NodeList(NodeList&&) noexcept = default;
  NodeList& operator=(NodeList&&) noexcept = default;

  size_t size() const { return at_.size(); }
  bool empty() const { return at_.empty(); }
  const Node& operator[](size_t i) const { return *at_[i]; }
  const Node& front() const { return *at_.front(); }
  const Node& back() const { return *at_.back(); }
  const_iterator begin() const { return const_iterator(at_.data()); }
  const_iterator end() const { return const_iterator(at_.data() + at_.size()); }
  // The blocks the list points into (what Append() keeps), in the order first appended.
  const std::vector<NodeBlockConstSharedPtr>& blocks() const { return blocks_; }

  void reserve(size_t n) { at_.reserve(n); }
  // A copy of `node`, in storage the list owns.
  void push_back(const Node& node);
  // Node i, for a producer (or a test) that edits a node before the set is published: the
  // node is first copied into the list's own storage (each call copies), so lists sharing the
  // old one keep it unchanged.
  Node& Mutable(size_t i);
  // `block`'s nodes [from, to), shared: the list keeps the block, not a copy of them. O(to -
  // from) pointers and O(1) for the block when it is the last one appended.
  void Append(const NodeBlockConstSharedPtr& block, size_t from, size_t to);
  void Append(const NodeBlockConstSharedPtr& block) { Append(block, 0, block->nodes.size()); }
  // A list of `at`, pointers into `blocks` (the caller's promise: every pointer is to a node
  // of one of them), in that order.
  static NodeList Assemble(std::vector<const Node*> at,
                           std::vector<NodeBlockConstSharedPtr> blocks);
  // The pointers, in order (a producer building the next list from this one).
  const std::vector<const Node*>& pointers() const { return at_; }
  // The vector of the list's only block when the list is exactly that block and nobody else
  // holds it (a producer reusing a released set's memory); empty otherwise. Leaves the list
  // empty when it returns the vector.
  std::vector<Node> TakeSoleBlock();

 private:
  // A copy of `node` in the list's own storage (made at the first call).
  Node& Own(const Node& node);

  std::vector<const Node*> at_;
  std::vector<NodeBlockConstSharedPtr> blocks_;
  // What push_back() filled (a deque: its nodes never move); kept by copies, pushed into by
  // the list that made it only (own_, also in pushed_).
  std::vector<std::shared_ptr<const std::deque<Node>>> pushed_;
  std::shared_ptr<std::deque<Node>> own_;
};

// Producers, before publishing: the summary of `nodes` (upstream/node_summary.cc). O(nodes).
NodeSummary SummarizeNodes(const NodeList& nodes);

struct NodeSet {
  NodeList nodes;
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
