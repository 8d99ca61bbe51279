// The `dns` discovery provider (reference §5.2): upstreams with `discovery_type: dns` take every
// record DNS has for their `service_name`.
//
// config.yaml:
//   discovery:
//     dns:
//       servers: ["127.0.0.1:8600"]          # or resolv_conf: /path (exactly one of the two)
//       order: [last, SRV, A, AAAA, CNAME]   # the default; 1 to 5 unique entries
//
// A lookup tries the record types in `order` until one has records (`last`: the type that last had
// records for this service, skipped until there is one). `service_name` is `name` or `name:port`.
// What each type gives (no randomisation, records in answer order):
//   - A / AAAA: {host: address, weight: 1, port: service_name's port, else the default};
//   - SRV: per record, the addresses of its target (A, else AAAA; a target that is an IP
//     literal is taken as is), port = service_name's port, else the record's (0: the
//     default), weight = the record's (0 counts as 1) split evenly over the target's
//     addresses (integer division, at least 1), priority = -(record's priority), so lower
//     SRV priorities are used first (reference §3.3);
//   - CNAME: the addresses of the alias' target (A, else AAAA).
// Refresh: an answer is kept for the smallest TTL among the records used, clamped to
// [min_refresh_ms, max_refresh_ms]; then the service is looked up again and published (the
// Directory drops an equal list). When no type has records (NXDOMAIN or no data) the service has no
// nodes (published empty: 503). A failed lookup (timeout, refused, SERVFAIL, bad message) publishes
// nothing, keeping the last good nodes, and is retried after retry_ms; only a service that never
// had an answer is published empty on its first failure, so that /status/ready does not wait for a
// DNS server that is down.
//
// Runs on the control loop through its own AresResolver (its `servers` or `resolv_conf`;
// queries go to DNS only, without search list or hosts file): no blocking, no thread. Cost:
// per watched service and TTL, one round of a few queries (types tried in order, plus A or
// AAAA for each SRV target).
// Thread rules: control thread only, as every DiscoveryProvider.
#pragma once

#include <uv.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "discovery/ares_resolver.h"
#include "turnpike/discovery.h"

namespace turnpike::discovery {

// One resource record of a DNS answer, decoded (only the types the provider uses).
struct DnsRecord {
  int type = 0;  // ns_t_a, ns_t_aaaa, ns_t_srv, ns_t_cname
  uint32_t ttl = 0;
  std::string address;  // A / AAAA: the address as text
  std::string target;   // SRV target / CNAME alias target, without the trailing dot
  int priority = 0;     // SRV
  int weight = 0;       // SRV
  int port = 0;         // SRV
};

// The answer-section records of `type` in DNS message `message` (others, e.g. the CNAME chain
// before A records, are skipped). False for a malformed message.
bool ParseDnsAnswer(const std::vector<unsigned char>& message, int type,
                    std::vector<DnsRecord>* out);

enum class DnsType { kLast, kSrv, kA, kAaaa, kCname };

struct DnsProviderConfig {
  std::vector<std::string> servers;  // "ip", "ip:port" or "[ipv6]:port"
  std::string resolv_conf;
  std::vector<DnsType> order = {DnsType::kLast, DnsType::kSrv, DnsType::kA, DnsType::kAaaa,
                                DnsType::kCname};
  // Not config.yaml keys (tests shorten them).
  uint64_t min_refresh_ms = 1000;
  uint64_t max_refresh_ms = 3600 * 1000;
  uint64_t retry_ms = 2000;
  int timeout_ms = 2000;  // per try
  int tries = 2;
};

// Validates `discovery.dns` (APISIX's schema: servers xor resolv_conf, order). Errors name the
// field, e.g. "order[1]: must be one of last, SRV, A, AAAA, CNAME".
StatusOr<DnsProviderConfig> ParseDnsProviderConfig(const nlohmann::json& conf);

class DnsProvider final : public DiscoveryProvider {
 public:
  explicit DnsProvider(DnsProviderConfig config);
  // REQUIRES: Stop() was called and the loop ran its close callbacks (or Start() never was).
  ~DnsProvider() override;

  Status Start(const DiscoveryEnvironment& env) override;
  void Watch(const ServiceRef& service) override;
  void Unwatch(const ServiceRef& service) override;
  void Stop() override;
  // True once every service watched so far had its first answer (or first failure).
  bool ready() const override;
  // The control API's /v1/discovery/dns/dump (APISIX's dns module has none; a Turnpike
  // addition in the shape of the others):
  //   {"config": {"servers": [...] | "resolv_conf": "...", "order": [...]},
  //    "services": {"<service_name>": {"nodes": [{"host", "weight", "port"?, "priority"?}],
  //                 "record_type": "SRV", "answered": true, "failing": false,
  //                 "next_lookup_ms": 4200}}}
  // `nodes` is the last list published (absent before the first answer), `record_type` the
  // type it came from (absent when no type had records), `failing` whether the last lookup
  // failed (the nodes are then the last good ones). Control thread.
  nlohmann::json Dump() const override;

  struct Stats {
    uint64_t lookups = 0;   // lookup rounds started
    uint64_t failures = 0;  // rounds that failed (last good nodes kept)
    uint64_t queries = 0;   // DNS queries sent
  };
  const Stats& stats() const { return stats_; }

 private:
  struct Service;

  void StartRound(Service* service);
  void NextType(Service* service);
  void QueryType(Service* service, DnsType type);
  // Looks up the addresses of `name` (A, else AAAA) for SRV target / CNAME index `index`.
  void ResolveTarget(Service* service, size_t index, const std::string& name, bool aaaa);
  void TargetDone(Service* service);
  void Finish(Service* service, bool ok, const char* error);
  void Tick();
  // The callback's guard: the service is still watched and in the same round.
  Service* Find(const ServiceRef& ref, uint64_t round);

  DnsProviderConfig config_;
  DiscoverySink* sink_ = nullptr;
  uv_loop_t* loop_ = nullptr;
  std::unique_ptr<AresResolver> resolver_;
  uv_timer_t tick_{};
  bool started_ = false;
  bool stopped_ = false;
  uint64_t next_round_ = 1;
  std::map<ServiceRef, std::unique_ptr<Service>> services_;
  Stats stats_;
};

class DnsProviderFactory final : public DiscoveryProviderFactory {
 public:
  std::string_view name() const override { return "dns"; }
  StatusOr<std::unique_ptr<DiscoveryProvider>> Create(const nlohmann::json& conf) const override;
};

}  // namespace turnpike::discovery
