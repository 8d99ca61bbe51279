// Snapshot: everything a worker needs to serve requests for one config version, compiled
// from the typed config and published whole (latest wins).
//
// Built on the control thread by BuildSnapshot(), then immutable and shared by all workers.
// A request pins the snapshot it started with, so a reload never changes it mid-flight.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/specs.h"
#include "expr/expr.h"
#include "expr/ip_matcher.h"
#include "proxy/plugin_registry.h"
#include "router/route_table.h"
#include "turnpike/clock.h"
#include "turnpike/metrics.h"
#include "upstream/node_set.h"

namespace turnpike::proxy {

// An upstream ready to use: resolved nodes and effective settings.
struct Upstream {
  std::string key;                        // "upstreams/<id>" or "routes/<id>" (inline)
  upstream::NodeSetConstSharedPtr nodes;  // never null (may be empty)
  config::Timeout timeout;                // effective (defaults applied)
  int retries = 0;                        // effective: spec, else nodes - 1
  double retry_timeout = 0;
  config::PassHost pass_host = config::PassHost::kPass;
  std::string upstream_host;
  config::KeepalivePool keepalive;
  uint32_t slot = 0;  // dense index: per-worker state (pickers) by slot
};

struct Route {
  std::string id;
  std::string name;
  std::string service_id;
  std::string service_name;
  const Upstream* upstream = nullptr;  // nullptr: answer `fail_status`
  int fail_status = 0;                 // 502 (upstream_id not found) or 503 (no upstream)
  bool has_timeout = false;
  config::Timeout timeout;  // overrides the upstream's when has_timeout
  PluginChain chain;        // service + plugin_config + route plugins, merged
  // Predicates the router asks about (RouteKey::has_filter): client address, `vars`.
  std::optional<expr::IpMatcher> remote_addrs;
  expr::ExprConstPtr vars;
  // `vars` or one of the route's plugins reads post_arg_* variables.
  bool needs_post_args = false;
};

// Client-address rules from config.yaml, compiled (reference §3.2, §7.3).
struct AddressRules {
  // nginx realip: when the peer is in real_ip_from, remote_addr comes from real_ip_header.
  expr::IpMatcher real_ip_from;
  bool real_ip_from_unix = false;
  std::string real_ip_header = "x-real-ip";  // lowercased
  bool real_ip_recursive = false;            // skip trusted addresses from the right of the header
  // apisix.trusted_addresses: peers whose X-Forwarded-* are kept.
  bool has_trusted = false;
  expr::IpMatcher trusted;
};

struct Snapshot {
  uint64_t version = 0;  // increases with every published snapshot
  router::RouteTableConstSharedPtr table;
  std::vector<Route> routes;                         // indexed by the route table's payload
  std::vector<std::unique_ptr<Upstream>> upstreams;  // indexed by Upstream::slot
  AddressRules addresses;
  bool delete_uri_tail_slash = false;
  std::vector<PluginChain> global_rules;  // run for every request, matched or not
  uint32_t global_phases = 0;             // union of the global rules' phases
  // Some route or global rule reads post_arg_* variables: a worker then reads a form body
  // (application/x-www-form-urlencoded, up to client_body_buffer_size) before routing.
  // Otherwise bodies always stream through unread.
  bool needs_post_args = false;
  // Some plugin wants the request body itself (Plugin::reads_request_body): a worker reads
  // every request body, up to client_body_buffer_size, before the request phases.
  bool needs_request_body = false;
};

using SnapshotConstSharedPtr = std::shared_ptr<const Snapshot>;

struct BuildStats {
  size_t routes = 0;
  size_t upstreams = 0;
  size_t nodes = 0;
  size_t reused_node_sets = 0;  // node sets carried over unchanged from `previous`
};

struct BuildInput {
  const config::GatewayConfig* gateway = nullptr;
  const config::RoutesConfig* routes = nullptr;
  const Snapshot* previous = nullptr;  // may be null; unchanged node sets keep its pointers
  uint64_t version = 0;
  const PluginRegistry* plugins = nullptr;  // may be null: then no plugin is known
  // What plugin factories get (FactoryContext): both outlive every snapshot. Null metrics: a
  // registry of the build's own (`turnpike check`), so factories still register and fail
  // alike; null clock: the system clock.
  MetricsRegistry* metrics = nullptr;
  Clock* clock = nullptr;
};

struct BuildReport {
  // Items skipped while compiling (unknown plugin, bad plugin config...), with their
  // location: reported like config errors.
  std::vector<config::ConfigError> errors;
  std::vector<std::string> warnings;  // problems with single nodes, dangling references
  BuildStats stats;
};

// Control thread. Composes routes with their services and plugin configs (reference §2.5),
// compiles plugin chains, resolves upstream nodes (may block on DNS) and builds the router.
SnapshotConstSharedPtr BuildSnapshot(const BuildInput& input, BuildReport* report);

}  // namespace turnpike::proxy
