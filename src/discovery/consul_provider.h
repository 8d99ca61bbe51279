// The `consul` discovery provider (reference §5.4): upstreams with `discovery_type: consul`
// take the passing instances of the Consul service named by their `service_name`. The config
// is consul_config.h; what is read from Consul and written to the dump is consul_catalog.h.
//
// Per configured server, as APISIX's consul module does (apisix/discovery/consul/):
//   - Round: GET /v1/catalog/services and GET /v1/health/state/any (for their X-Consul-Index),
//     then GET /v1/health/service/<name>?passing=true for each watched service the catalog
//     lists (not in skip_services, never "consul"). Nodes: {Service.Address, Service.Port
//     (0: 80), weight}, deduped by host:port, sorted by sort_type. The round's answer replaces
//     the server's previous one: a service no longer listed, or without passing instances,
//     is gone from the server.
//   - keepalive (the default): then two blocking queries, catalog/services and
//     health/state/any with `?index=<last X-Consul-Index>&wait=<timeout.wait>s` (read timeout
//     wait * 17/16 + timeout.read, Consul's jitter included). The first to come back with a
//     new index starts a round (the other is cancelled); one that comes back unchanged (the
//     wait ran out) is sent again, no sooner than min_rewatch_ms after the last; an index
//     that went backwards (Consul restarted) starts a round too, as Consul's docs advise.
//   - keepalive: false: a round every fetch_interval seconds; services are fetched only when
//     an index changed (or a new service is watched).
//   - Errors (connect, timeout, non-200, bad JSON, missing X-Consul-Index, one service's
//     fetch failing) end the round with nothing changed, and the next round starts after a
//     back-off of 1, 4, 16, 64, 256, then again 1, ... seconds (APISIX's get_retry_delay),
//     reset by a successful round.
//   - A Watch() of a service the catalog lists but no round fetched yet starts a round at
//     once (or joins the one fetching services).
//     APISIX fetches every service of the catalog; this provider fetches only the watched
//     ones (the rule), so its answers and dump hold those.
// What a service's upstreams get (APISIX's nodes()): its nodes from the last server that
// listed it (merged as APISIX's shared dict: a later round of any server overwrites, a
// server's round removes only what that server had listed), else [default_service] when
// configured, else no nodes (503). Published after every round, and on Watch() when nothing
// more is to come first (known nodes, or no server will fetch it); the Directory drops equal
// lists. A failed round publishes nothing new (last good nodes stay), except to services never
// published yet, which then get the above.
//
// dump: loaded at Start() (a synchronous read, before anything is served) when load_on_init
// (services from the file count as listed until a server's round says otherwise, as in APISIX);
// written (temp file + rename) after a round that changed something, at most every
// dump_interval_ms, with every server's services. The write is synchronous on the control loop: a
// few kB to MB to a local file.
//
// ready(): once every server has finished its first round (answered or failed), so a Consul
// that is down at start does not hold /status/ready forever (services then get the dump's
// nodes, the default service or none).
//
// Thread rules: control thread only, as every DiscoveryProvider. Cost per server: two idle
// long polls; per change, 2 + (watched services) requests.
#pragma once

#include <uv.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "discovery/consul_catalog.h"
#include "discovery/consul_config.h"
#include "http_client/client.h"
#include "turnpike/discovery.h"

namespace turnpike::discovery {

class AresResolver;

class ConsulProvider final : public DiscoveryProvider {
 public:
  explicit ConsulProvider(ConsulConfig config);
  // REQUIRES: Stop() was called and the loop ran its close callbacks (or Start() never was).
  ~ConsulProvider() override;

  Status Start(const DiscoveryEnvironment& env) override;
  void Watch(const ServiceRef& service) override;
  void Unwatch(const ServiceRef& service) override;
  void Stop() override;
  bool ready() const override;
  // APISIX's dump_data(): {"config": the effective discovery.consul section, "services":
  // {name: [{host, port, weight}]}} (the merged view, dump-file entries included).
  nlohmann::json Dump() const override;

  struct Stats {
    uint64_t rounds = 0;           // rounds started
    uint64_t failures = 0;         // rounds that failed (nothing changed)
    uint64_t watches = 0;          // blocking queries sent
    uint64_t service_fetches = 0;  // health/service requests sent
    uint64_t dump_writes = 0;
  };
  const Stats& stats() const { return stats_; }

 private:
  struct Server;
  enum class Next { kRound, kWatch };

  void StartRound(Server* s);
  void Resolve(Server* s);  // a server given by name: its address, then the round
  void RoundStep(Server* s);
  void OnRoundAnswer(Server* s, http_client::Result result);
  void RoundFailed(Server* s, const std::string& what);
  void ApplyRound(Server* s);
  void StartWatches(Server* s);
  void SendWatch(Server* s, bool catalog);
  void OnWatchDone(Server* s, bool catalog, http_client::Result result);
  void Schedule(Server* s, uint64_t delay_ms, Next next);
  void OnTimer(Server* s);
  // The view of `name` (APISIX's nodes()): listed nodes, else [default_service], else none.
  DiscoveredNodesConstSharedPtr View(const std::string& name) const;
  // Publishes View() of every watched service (`only_unpublished`: of those never published).
  void PublishAll(bool only_unpublished);
  // A server may still list `name` in a round to come (its first, or a fetch not made yet).
  bool FetchPending(const std::string& name) const;
  void MarkDumpDirty();
  void WriteDump();
  http_client::Request MakeRequest(std::string target, bool blocking) const;

  ConsulConfig config_;
  DiscoverySink* sink_ = nullptr;
  uv_loop_t* loop_ = nullptr;
  std::unique_ptr<http_client::Client> client_;
  std::unique_ptr<AresResolver> resolver_;  // when a server is given by name
  std::vector<std::unique_ptr<Server>> servers_;
  std::set<std::string> skip_;
  std::set<ServiceRef> watched_;
  // The merged view (APISIX's shared dict): service -> nodes.
  std::map<std::string, DiscoveredNodesConstSharedPtr> all_;
  std::set<ServiceRef> published_;  // watched services published at least once
  // What a service no server lists gets: [default_service], or no nodes.
  DiscoveredNodesConstSharedPtr default_nodes_;
  bool started_ = false;
  bool stopped_ = false;
  // Dump writes, coalesced.
  uv_timer_t dump_timer_{};
  bool dump_dirty_ = false;
  bool dump_timer_armed_ = false;
  uint64_t last_dump_ms_ = 0;
  bool dumped_once_ = false;
  Stats stats_;
};

class ConsulProviderFactory final : public DiscoveryProviderFactory {
 public:
  std::string_view name() const override { return "consul"; }
  StatusOr<std::unique_ptr<DiscoveryProvider>> Create(const nlohmann::json& conf) const override;
};

}  // namespace turnpike::discovery
