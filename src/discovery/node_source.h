// NodeSource: what feeds one upstream's node set when the snapshot build cannot fill it
// itself, and the helpers that turn DiscoveredNodes into upstream::Nodes.
//
// The snapshot build (on the reload thread) fills a node set at once when every configured
// node is an IP literal: nothing to wait for, as before. Otherwise the upstream gets an empty
// NodeSetSlot and a NodeSource, and the control thread's discovery::Directory feeds the slot:
//   - static nodes with domain names: the configured list, its domains resolved
//     asynchronously (never a blocking getaddrinfo in the build);
//   - `discovery_type` + `service_name`: what the named provider publishes, resolved the
//     same way.
// Sources compare by value: a reload that keeps an upstream's key and source keeps its slot.
#pragma once

#include <sys/socket.h>

#include <memory>
#include <string>

#include "turnpike/discovery.h"
#include "upstream/node_set.h"

namespace turnpike::discovery {

struct NodeSource {
  std::string provider;   // "" for static nodes; else the upstream's discovery_type
  ServiceRef service;     // provider != ""
  DiscoveredNodes nodes;  // provider == "": the configured nodes (ports filled in)
  bool operator==(const NodeSource&) const = default;
};
using NodeSourceConstSharedPtr = std::shared_ptr<const NodeSource>;

// Fills node->addr from an IP literal (v4, or v6 without brackets) and `port`. False for
// anything else (a domain name).
bool ParseIpLiteral(const std::string& host, uint16_t port, upstream::Node* node);

// Sets node->addr from a resolved address (its port replaced by `port`).
void SetAddress(const sockaddr* addr, socklen_t len, uint16_t port, upstream::Node* node);

// A node from a DiscoveredNode whose address is already in node->addr: copies host, port,
// weight and priority and derives ip_text and host_header (`host[:port]`, port omitted when
// 80; brackets for IPv6), so requests never format them.
void FinishNode(const DiscoveredNode& from, upstream::Node* node);

constexpr int kDefaultPort = 80;  // http: the only scheme so far

}  // namespace turnpike::discovery
