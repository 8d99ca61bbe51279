// prometheus: runtime part (reference §4.3, priority 500, log phase). Counts every request of
// the routes, services and global rules that carry it into apisix_http_status,
// apisix_http_latency (type request / upstream / apisix, in ms) and apisix_bandwidth (type
// ingress / egress, bytes). The exporter (daemon/prometheus_service.h) renders them with the
// process gauges on the control thread.
//
// Cost per request (worker, log phase): a few virtual calls for the route, status, timings,
// node and bytes; one hash over them and the extra labels' values; one probe of this
// worker's cache of bound cells (WorkerCache); then six relaxed load/store pairs into cells
// only this worker writes (no lock, no shared write, no allocation). A label set seen for the
// first time on a worker (a new route, status, node or extra-label value) builds its label
// strings and binds its cells in the registry (allocates once). Label values that are the
// same for every request of a route (route, service, matched_uri/host, constant extra labels)
// come from the pinned snapshot's route; nothing is looked up by name per request.
//
// A request is counted once: with prometheus on a global rule and on its route, the first to
// run its log hook (the global rule's) counts it.
#pragma once

#include <memory>

#include "plugins/prometheus/config.h"
#include "turnpike/metrics.h"
#include "turnpike/plugin.h"
#include "turnpike/typed_factory.h"

namespace turnpike::plugins::prometheus {

// The registered families, shared by every instance (handles live as long as the registry).
struct Families {
  Counter* status = nullptr;
  Histogram* latency = nullptr;
  Counter* bandwidth = nullptr;
};

// Registers the three families with `attr`'s prefix, buckets, extra labels and bound
// (idempotent). Control thread.
StatusOr<Families> RegisterFamilies(MetricsRegistry& registry, const Attr& attr);

class PrometheusPlugin final : public Plugin {
 public:
  // Each worker's cache of bound label sets starts with kCacheEntries slots and doubles (on
  // a miss, which allocates anyway) when a label set finds no free slot among its probes, up
  // to kMaxCacheEntries; past that a colliding entry is overwritten and rebound on its next
  // use (no series is lost: the cells stay in the registry).
  static constexpr size_t kCacheEntries = 1024;
  static constexpr size_t kMaxCacheEntries = 256 * 1024;

  PrometheusPlugin(Config config, std::shared_ptr<const Attr> attr, Families families)
      : config_(std::move(config)), attr_(std::move(attr)), families_(families) {}

  uint32_t phases() const override { return kPhaseLog; }
  void Log(PluginContext& ctx) const override;
  bool has_worker_state() const override { return true; }
  std::unique_ptr<WorkerState> CreateWorkerState(const WorkerEnvironment& env) const override;

 private:
  struct Cache;
  struct Entry;
  void Bind(PluginContext& ctx, const MatchedRoute& route, int code, bool from_upstream,
            std::string_view node, Cache& cache, Entry& e) const;
  static void Count(PluginContext& ctx, Entry& e);

  Config config_;
  std::shared_ptr<const Attr> attr_;
  Families families_;
  VarRef balancer_ip_ = {VarRef::Kind::kBuiltin, BuiltinVar::kBalancerIp, "", "balancer_ip"};
};

class PrometheusFactory final
    : public TypedPluginFactory<PrometheusFactory, Config, PrometheusPlugin> {
 public:
  static constexpr std::string_view kName = "prometheus";
  static constexpr int kPriority = 500;
  static StatusOr<Config> Parse(const nlohmann::json& conf, FactoryContext& ctx) {
    return ParseConfig(conf, ctx.metadata());
  }
  static constexpr auto kParseConfig = &Parse;

  // Parses plugin_attr (the same for every instance: fixed for the process) and registers
  // the families.
  StatusOr<PluginConstSharedPtr> MakePlugin(Config config, FactoryContext& ctx) const;
};

}  // namespace turnpike::plugins::prometheus
