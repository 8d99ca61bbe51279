// The discovery interface (reference §3.5, §5): what a service-discovery provider author
// implements (dns, nacos, consul, kubernetes, ... later).
//
// A provider knows how to find the nodes of named services. The daemon tells it which
// services are wanted: Watch() when a reload brings the first upstream with its
// `discovery_type` and that `service_name` + `discovery_args`, Unwatch() when a reload
// removes the last one. The provider answers through its DiscoverySink, at any time and as
// often as the service changes, with an immutable list of nodes. From there the daemon does
// the rest: domain names in the list are resolved, the list becomes the upstream's node set,
// and workers switch to it on their next request, without a route rebuild.
//
// Contracts:
//   - Producers dedupe by value. Publishing a list equal to the last one for the service is
//     a no-op (the sink checks, so a polling provider may publish every answer).
//   - Last known good. A failed lookup or poll publishes nothing: the last list stays. Publish
//     an empty list only when the registry really says the service has no nodes (the
//     upstream then answers 503).
//   - Until a service's first Publish() its upstreams have no nodes (503, as APISIX before
//     its first discovery answer), and /status/ready waits for ready().
//   - APISIX's discovery node schema: host non-empty, weight an integer >= 0, port 0..65535.
//     A list with a node that fails it gives its upstreams no nodes (503, APISIX's "invalid
//     nodes format"), so a provider reading a weight that is not an integer >= 0 (1.5, "2",
//     -1) publishes the node with weight -1 rather than dropping or rounding it.
//
// Thread rules: every call into the provider (Start, Watch, Unwatch, Stop, ready) and every
// call into the sink happens on the control thread. A provider that works on a thread of its
// own hands its answers back to the control thread before publishing. Nothing here may block
// the control thread: lookups are asynchronous.
#pragma once

#include <compare>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "turnpike/status.h"

// libuv's loop, by name only (a provider that uses it includes <uv.h>).
struct uv_loop_s;
typedef struct uv_loop_s uv_loop_t;  // NOLINT(modernize-use-using): libuv's own spelling

namespace turnpike {

// One node as a registry reports it (the discovery node schema: host and weight required).
struct DiscoveredNode {
  std::string host;  // IP literal or domain name (IPv6 without brackets)
  int port = 0;      // 0: the scheme's default port
  int weight = 1;    // >= 0
  int priority = 0;  // higher first (reference §3.3)
  bool operator==(const DiscoveredNode&) const = default;
};

using DiscoveredNodes = std::vector<DiscoveredNode>;
using DiscoveredNodesConstSharedPtr = std::shared_ptr<const DiscoveredNodes>;

// What an upstream asks a provider for: its `service_name` and `discovery_args` (nacos:
// namespace_id, group_name), compared by value.
struct ServiceRef {
  std::string service_name;
  std::map<std::string, std::string> args;
  auto operator<=>(const ServiceRef&) const = default;
  bool operator==(const ServiceRef&) const = default;
};

// Where a provider publishes. Implemented by the daemon; one sink per provider instance,
// valid from Start() until Stop() returned. Control thread only.
class DiscoverySink {
 public:
  // The current nodes of `service` (null is the same as empty). Ignored for services that
  // are not watched, and a no-op when equal to the last list published for `service`.
  virtual void Publish(const ServiceRef& service, DiscoveredNodesConstSharedPtr nodes) = 0;
  // The same, for a provider that holds a service's nodes in parts (kubernetes: one per
  // EndpointSlice): the nodes are the union of `parts` (null and empty parts count as none),
  // each part sorted by host, then port (APISIX's node order), and the same as Publish() of the
  // parts merged in that order. A part the provider did not change since its last call is best
  // passed as the same pointer: the daemon then reuses what it made of it, so a change costs
  // the parts that changed (250 nodes of a 10k-node service), not the whole set. The default
  // merges the parts and calls Publish() (src/discovery/parts.cc).
  virtual void PublishParts(const ServiceRef& service,
                            std::vector<DiscoveredNodesConstSharedPtr> parts);

 protected:
  ~DiscoverySink() = default;
};

// What a provider runs on, given to Start(). Everything in it outlives the provider's use
// of it (until Stop() returned).
struct DiscoveryEnvironment {
  DiscoverySink* sink = nullptr;  // where to publish
  // The control loop: the provider's timers (polling intervals, back-off) and connections
  // (the control-loop HTTP client, http_client::Client, takes this loop) run on it.
  uv_loop_t* loop = nullptr;
};

class DiscoveryProvider {
 public:
  virtual ~DiscoveryProvider() = default;

  // Once, before any Watch().
  virtual Status Start(const DiscoveryEnvironment& env) = 0;
  // `service` is wanted (first upstream naming it). Look it up, then keep it current.
  virtual void Watch(const ServiceRef& service) = 0;
  // `service` is no longer wanted (its last upstream is gone); publishing it is ignored.
  virtual void Unwatch(const ServiceRef& service) = 0;
  // Shutdown begins: cancel lookups, close connections. No Publish() afterwards.
  virtual void Stop() = 0;
  // /status/ready waits until this is true: typically once every service watched at the
  // first snapshot has had its first answer (or its first lookup gave up).
  virtual bool ready() const { return true; }
  // What the control API's /v1/discovery/<name>/dump shows (APISIX's dump_data()); null when
  // the provider has nothing to show.
  virtual nlohmann::json Dump() const { return nullptr; }
};

// The config part of a provider: registered by name (the upstream's `discovery_type`, e.g.
// "dns") in the daemon's explicit list (src/daemon/builtin_providers.cc; no static
// registration). Create() runs once on the control thread with the provider's section of
// config.yaml (`discovery.<name>`; an empty object when absent) and validates it.
class DiscoveryProviderFactory {
 public:
  virtual ~DiscoveryProviderFactory() = default;
  virtual std::string_view name() const = 0;
  virtual StatusOr<std::unique_ptr<DiscoveryProvider>> Create(const nlohmann::json& conf) const = 0;
};

}  // namespace turnpike
