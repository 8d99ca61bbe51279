// The `nacos` discovery provider (reference §5.3): upstreams with `discovery_type: nacos` take the
// instances Nacos lists for their `service_name` in `discovery_args.namespace_id` (default
// "public") and `discovery_args.group_name` (default "DEFAULT_GROUP"). Config: nacos_config.h; the
// wire format: nacos_api.h.
//
// Polling, as APISIX: every `fetch_interval` one round asks for every watched service (only those:
// services no upstream names are never fetched), up to four requests at a time, on one host chosen
// at random; services that failed there (connect error, timeout, non-200, bad JSON) are asked of
// the next host, and so on until every host was tried. A service watched for the first time is
// fetched at once (a round starts on the next loop iteration), not after an interval. Upstreams
// whose refs differ only by spelled-out defaults share one fetch.
//
// Login: a host with `user:pass@` gets POST auth/login first; the accessToken goes with every list
// request until its tokenTtl is 90% spent (APISIX logs in again every round; a login answer without
// tokenTtl is used for that round only, as APISIX), and a 403 on a list request that carried a
// token drops it and logs in again once per host and round. A failed login fails the host.
// `access_key` + `secret_key` sign each list request (ak, data, signature).
//
// Answers: nodes {host: ip, port, weight: weight or the configured `weight`} (nacos_api.h),
// published per service (the sink drops an equal list). An answer whose `hosts` text equals the
// previous answer's is not parsed again: a service polled every second with 10,000 unchanged
// instances costs a read and a compare on the control thread. An empty `hosts` publishes no nodes
// (503). A failed poll keeps the last good nodes (APISIX drops a service that failed on the host
// that answered others); a service never answered is published empty once every host failed for it,
// so that /status/ready does not wait for a registry that is down.
//
// Host names in `host` are looked up with c-ares (system resolv.conf), kept up to their TTL (1 to
// 60 s), looked up again after a connect failure.
//
// Runs on the control loop with http_client::Client: no blocking, no thread. Cost per round: one
// request per watched service (plus a login when the token is due) and, per changed answer, one
// JSON parse.
//
// Thread rules: control thread only, as every DiscoveryProvider.
#pragma once

#include <uv.h>

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "discovery/ares_resolver.h"
#include "discovery/nacos_config.h"
#include "http_client/client.h"
#include "turnpike/discovery.h"

namespace turnpike::discovery {

class NacosProvider final : public DiscoveryProvider {
 public:
  explicit NacosProvider(NacosProviderConfig config);
  // REQUIRES: Stop() was called and the loop ran its close callbacks (or Start() never was).
  ~NacosProvider() override;

  Status Start(const DiscoveryEnvironment& env) override;
  void Watch(const ServiceRef& service) override;
  void Unwatch(const ServiceRef& service) override;
  void Stop() override;
  // True once every service watched so far had its first answer (or failed on every host).
  bool ready() const override;
  // APISIX's dump_data(): {"config": the effective discovery.nacos (host URLs without their
  // credentials, no secret_key), "services": {namespace: {group: {service: [{host, port,
  // weight}]}}}} with the last nodes of every watched service.
  nlohmann::json Dump() const override;

  struct Stats {
    uint64_t rounds = 0;
    uint64_t logins = 0;     // login requests sent
    uint64_t requests = 0;   // instance-list requests sent
    uint64_t failures = 0;   // list requests that failed (on one host)
    uint64_t parsed = 0;     // answers parsed and published
    uint64_t unchanged = 0;  // answers whose hosts text was the last one's: not parsed
  };
  const Stats& stats() const { return stats_; }
  // Tests: the first host of each round is hosts[draw % hosts.size()].
  void SeedForTest(uint32_t seed) { random_.seed(seed); }

 private:
  // A Nacos service: where upstreams' refs point once the defaults are filled in.
  struct Key {
    std::string namespace_id;
    std::string group_name;
    std::string service_name;
    auto operator<=>(const Key&) const = default;
  };
  struct Service;
  struct Host;

  static Key KeyOf(const ServiceRef& ref);
  void Schedule();
  void StartRound();
  void TryHost();
  void Login(Host* host);
  void FetchMore();
  void Fetch(const Key& key);
  void OnList(const Key& key, http_client::Result result);
  void HostDone();
  void EndRound();
  void Publish(Service* service, DiscoveredNodesConstSharedPtr nodes);
  Host& current_host();  // the host the round is on

  NacosProviderConfig config_;
  DiscoverySink* sink_ = nullptr;
  uv_loop_t* loop_ = nullptr;
  std::unique_ptr<http_client::Client> client_;
  std::unique_ptr<AresResolver> resolver_;  // only when a host is a domain name
  uv_timer_t timer_{};
  bool started_ = false;
  bool stopped_ = false;
  std::mt19937 random_{std::random_device{}()};
  std::vector<Host> hosts_;
  std::map<Key, std::unique_ptr<Service>> services_;

  // The round in flight.
  bool in_round_ = false;
  uint64_t round_started_ms_ = 0;
  size_t round_start_host_ = 0;
  size_t hosts_tried_ = 0;
  std::vector<Key> todo_;    // services this host still has to answer (not yet sent)
  std::vector<Key> failed_;  // services that failed on this host: for the next one
  std::map<Key, http_client::RequestHandle> inflight_;
  http_client::RequestHandle login_;
  uint64_t resolve_id_ = 0;
  bool relogged_ = false;        // this host's token was renewed after a 403 this round
  bool awaiting_login_ = false;  // a 403 dropped the token: log in once the in-flight end
  bool host_answered_ = false;   // some list request succeeded on this host
  std::string host_error_;       // this host's last failure, for the log
  Stats stats_;
};

class NacosProviderFactory final : public DiscoveryProviderFactory {
 public:
  std::string_view name() const override { return "nacos"; }
  StatusOr<std::unique_ptr<DiscoveryProvider>> Create(const nlohmann::json& conf) const override;
};

}  // namespace turnpike::discovery
