// The `kubernetes` discovery provider (reference §5.5): upstreams with
// `discovery_type: kubernetes` take the ready addresses of a Kubernetes Endpoints object (or of
// a service's EndpointSlices with `watch_endpoint_slices: true`).
//
// service_name: `<namespace>/<name>:<port>` (the list form of the config:
// `<id>/<namespace>/<name>:<port>`), where <port> is the port's `name`, else its `targetPort`,
// else its number (so a named port cannot be asked for by number), as APISIX. The nodes are
// {host: address, port: the port's number, weight: default_weight}, sorted by host then port:
//   - Endpoints: for each subset, each of `addresses` (notReadyAddresses are not used) times
//     each of `ports`;
//   - EndpointSlices: the slices labelled `kubernetes.io/service-name: <name>` together, each
//     endpoint whose `conditions.ready` is true, each of its `addresses` times each port.
//
// Each cluster (config entry) has one KubeInformer (kubernetes_informer.h): List + Watch of
// the whole collection from Start(), whatever is watched, as APISIX's privileged agent does.
// The provider keeps every object the informer reports (namespace_selector's `match` /
// `not_match` applied here; `equal` / `not_equal` and label_selector by the API server), so a
// later Watch() is answered at once from memory. What is published:
//   - nothing for a cluster before its first complete list (upstreams answer 503, and
//     ready() is false: /status/ready waits, as APISIX's check_discovery_ready);
//   - after each list and each event, the nodes of every watched service of the objects
//     concerned (the Directory drops a list equal to the last one: an event that changes
//     nothing a service uses costs no node-set rebuild);
//   - a service whose object does not exist, or has no ready address on that port: an empty
//     list (503, as APISIX's nodes() returning nil); a service_name of the wrong form or with
//     an unknown cluster id: an empty list and an error log.
// When the API server is unreachable or answers errors, nothing is published: the last nodes
// stay until a list or watch succeeds again (informer back-off).
//
// Cost: per event, one JSON parse (in the informer), the object's nodes sorted and compared
// with what it held (equal: nothing more), then the watched services of that object published
// as their parts (DiscoverySink::PublishParts: one list per slice, the unchanged ones as the
// same pointers), so a change of one slice of a 10k-node service costs that slice, not a merge
// of every node.
// Memory: the node lists of every object in the selected namespaces.
// Thread rules: control thread only, as every DiscoveryProvider.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <simdjson.h>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "discovery/kubernetes_config.h"
#include "discovery/kubernetes_informer.h"
#include "turnpike/discovery.h"

namespace turnpike::discovery {

// The nodes of one object by port key (port name, targetPort or number), unsorted.
using KubePortNodes = std::map<std::string, DiscoveredNodes>;
// The same, sorted and shared (what the provider stores and publishes as parts).
using SharedPortNodes = std::map<std::string, DiscoveredNodesConstSharedPtr>;

// What an Endpoints object / an EndpointSlice gives (exposed for tests). False when the
// object lacks metadata.namespace / name (or, for a slice, its service-name label); `key` is
// "<namespace>/<name>" (the slice's service name), `part` the slice's own name ("" for
// Endpoints).
bool ReadEndpoints(simdjson::dom::element object, int weight, std::string* ns, std::string* key,
                   KubePortNodes* nodes);
bool ReadEndpointSlice(simdjson::dom::element object, int weight, std::string* ns, std::string* key,
                       std::string* part, KubePortNodes* nodes);

class KubernetesProvider final : public DiscoveryProvider {
 public:
  // `raw`: the config.yaml section, for Dump().
  explicit KubernetesProvider(KubernetesConfig config, nlohmann::json raw = nullptr);
  // REQUIRES: Stop() was called and the loop ran its close callbacks (or Start() never was).
  ~KubernetesProvider() override;

  Status Start(const DiscoveryEnvironment& env) override;
  void Watch(const ServiceRef& service) override;
  void Unwatch(const ServiceRef& service) override;
  void Stop() override;
  // True once every cluster completed its first list.
  bool ready() const override;
  // APISIX's dump_data(): {config, endpoints: [{id?, endpoints: [{name, value}]}]}, value
  // being the JSON text of {port: [{host, port, weight}]}.
  nlohmann::json Dump() const override;

  // For tests.
  const KubeInformer& informer(size_t cluster) const;
  size_t objects(size_t cluster) const;  // keys known (namespace/name)

 private:
  struct Cluster;
  struct Target {
    Cluster* cluster = nullptr;  // null: a bad service_name (published empty once)
    std::string key;             // namespace/name
    std::string port;            // port key
  };

  Target Resolve(const ServiceRef& service) const;
  void OnList(Cluster* c, const std::vector<simdjson::dom::element>& items);
  void OnEvent(Cluster* c, std::string_view type, simdjson::dom::element object);
  // Applies one object to `store` (upsert, or removal when `deleted`); its key in *key.
  // False when nothing changes: the object is skipped (malformed or outside the namespace
  // selector), or brings the nodes already stored for it (or deletes an unknown one).
  bool Apply(Cluster* c, simdjson::dom::element object, bool deleted, std::string* key);
  void PublishKey(Cluster* c, const std::string& key);
  void Publish(const ServiceRef& ref, const Target& target);

  KubernetesConfig config_;
  nlohmann::json raw_;
  DiscoverySink* sink_ = nullptr;
  bool stopped_ = false;
  std::vector<std::unique_ptr<Cluster>> clusters_;
  std::map<ServiceRef, Target> watched_;
};

class KubernetesProviderFactory final : public DiscoveryProviderFactory {
 public:
  std::string_view name() const override { return "kubernetes"; }
  StatusOr<std::unique_ptr<DiscoveryProvider>> Create(const nlohmann::json& conf) const override;
};

}  // namespace turnpike::discovery
