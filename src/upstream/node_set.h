// NodeSet: an immutable snapshot of the nodes of one upstream.
//
// Producers (static config, discovery::Directory) build a new NodeSet whenever
// the content changes and never mutate a published one, so a worker detects a change by
// comparing pointers. Shared read-only across threads.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace turnpike::upstream {

struct Node {
  std::string host;  // as configured (domain or IP literal, IPv6 without brackets)
  uint16_t port = 0;
  int weight = 1;
  int priority = 0;
  sockaddr_storage addr{};  // resolved address (filled by the producer)
  socklen_t addr_len = 0;
  // `addr`'s IP as text (IPv6 without brackets). Whoever fills `addr` fills this too, so
  // that requests never format it ($upstream_addr, $balancer_ip).
  std::string ip_text;
  std::string host_header;  // `host[:port]` for pass_host=node (port omitted when default)
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
  int weight = 0;
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

// True when both sets have the same nodes (host, port, weight, priority, address) in order.
bool SameNodes(const NodeSet& a, const NodeSet& b);

}  // namespace turnpike::upstream
