// Snapshot: everything a worker needs to serve requests for one config version, compiled
// from the typed config and published whole (latest wins).
//
// Built on the control thread by BuildSnapshot(), then immutable and shared by all workers.
// A request pins the snapshot it started with, so a reload never changes it mid-flight.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/specs.h"
#include "discovery/directory.h"
#include "discovery/node_source.h"
#include "expr/expr.h"
#include "expr/ip_matcher.h"
#include "proxy/plugin_instances.h"
#include "proxy/plugin_registry.h"
#include "router/route_table.h"
#include "turnpike/clock.h"
#include "turnpike/metrics.h"
#include "upstream/balancer.h"
#include "upstream/hash_key.h"
#include "upstream/health_slot.h"
#include "upstream/node_set.h"
#include "upstream/node_set_slot.h"

namespace turnpike::proxy {

// An upstream ready to use: where its nodes are published, and effective settings.
//
// The nodes live in their own slot, apart from the snapshot (upstream/node_set_slot.h): the
// build fills it at once when every node is an IP literal; otherwise (domain names,
// discovery) `source` says what feeds it and the control thread's discovery::Directory
// publishes sets into it later, without rebuilding the snapshot. Until then it is empty (503).
struct Upstream {
  std::string key;  // "upstreams/<id>" or "routes/<id>" (inline)
  // Never null; shared with later snapshots that keep the key and the source.
  upstream::NodeSetSlotSharedPtr nodes;
  discovery::NodeSourceConstSharedPtr source;  // null: nodes fixed at build (IP literals)
  upstream::BalancerType balancer = upstream::BalancerType::kRoundRobin;
  // chash: what a request hashes (hash_on + key).
  upstream::HashKey hash_key;
  config::Timeout timeout;  // effective (defaults applied)
  int retries = -1;         // spec, or -1: nodes - 1 of the set in use
  double retry_timeout = 0;
  config::PassHost pass_host = config::PassHost::kPass;
  std::string upstream_host;
  config::KeepalivePool keepalive;
  // `checks` (reference §3.4), unless apisix.disable_upstream_healthcheck: the checks, and
  // the slot where the daemon's health checker and the workers meet (first use, unhealthy
  // nodes, passive reports). Both null without checks.
  std::shared_ptr<const config::HealthChecksSpec> checks;
  upstream::HealthSlotSharedPtr health;
  uint32_t slot = 0;  // dense index: per-worker state (pickers) by slot

  // Retries allowed for a request that pinned `set`.
  int Retries(const upstream::NodeSet& set) const {
    return retries >= 0 ? retries : std::max<int>(0, static_cast<int>(set.nodes.size()) - 1);
  }
};

struct Route {
  // Unique in the process (snapshot version and index): PluginContext's MatchedRoute::key.
  uint64_t metrics_key = 0;
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
  // An HTTP/1.1 upgrade request (Upgrade + Connection: upgrade) goes up with those headers
  // and a 101 turns the connection into a tunnel (proxy/tunnel.h). The route's
  // enable_websocket when set, else its service's (APISIX).
  bool enable_websocket = false;
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
  // The distinct plugin instances of this snapshot's chains that keep per-worker state
  // (Plugin::has_worker_state), by PluginChain::Entry::worker_state_slot: each worker keeps
  // their states by this index (proxy/worker_states.h), as it keeps pickers by
  // Upstream::slot. Owned by the chains.
  std::vector<const Plugin*> worker_state_plugins;
  // The plugin instances of this build (the chains', and those of services and plugin
  // configs no route uses) by identity: owner, name, conf, metadata and attr. The next build
  // takes over those whose identity is unchanged (BuildInput::previous).
  PluginInstances plugin_instances;
};

using SnapshotConstSharedPtr = std::shared_ptr<const Snapshot>;

struct BuildStats {
  size_t routes = 0;
  size_t upstreams = 0;
  size_t nodes = 0;              // configured nodes (discovered ones are not counted)
  size_t reused_node_sets = 0;   // node-set slots carried over unchanged from `previous`
  size_t pending_node_sets = 0;  // slots left to the control thread (domain names, discovery)
  // Plugin instances taken over from `previous` (same identity: see PluginInstances), and
  // those the factories created.
  size_t reused_plugins = 0;
  size_t created_plugins = 0;
};

struct BuildInput {
  const config::GatewayConfig* gateway = nullptr;
  const config::RoutesConfig* routes = nullptr;
  // May be null. Unchanged node sets and plugin instances keep its pointers (so workers keep
  // their pickers and plugin worker states).
  const Snapshot* previous = nullptr;
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
  // The routes, services and upstreams of the file that the build left out for an error
  // above ("routes/<id>", "services/<id>", "upstreams/<id>"): not in the control API's view.
  std::vector<std::string> skipped;
  BuildStats stats;
};

// Control thread (or the reload job on the thread pool). Composes routes with their services
// and plugin configs (reference §2.5), compiles plugin chains (taking over the instances of
// `previous` whose identity is unchanged, see PluginInstances), fills node sets of IP-literal
// nodes and builds the router. Never blocks on DNS: upstreams with domain names or a
// discovery source get an empty slot, fed by the Directory once the snapshot is published
// (see NodeBindings).
SnapshotConstSharedPtr BuildSnapshot(const BuildInput& input, BuildReport* report);

// Control thread: the slots of `snapshot` that the discovery::Directory must feed (upstreams
// with a source), for Directory::Apply() right after publishing it.
std::vector<discovery::Binding> NodeBindings(const Snapshot& snapshot);

}  // namespace turnpike::proxy
