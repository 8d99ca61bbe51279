// HealthChecker: the upstream health checks of the whole process (reference
// §3.4), on the control thread's loop — one checker per upstream with `checks`,
// never one per worker.
//
// The daemon hands it, after every published snapshot, the bindings of the
// upstreams with checks (Apply). For each upstream it keeps the targets of its
// current node set, each with a lua-resty-healthcheck state
// (upstream/health_state.h), and on a tick (Options::tick_ms):
//   - starts the upstream's checker once a worker used the upstream
//   (HealthSlot::used(): APISIX
//     creates checkers on the first request); until then nothing is probed and
//     every node counts as healthy;
//   - re-targets when the upstream's node set changed (a discovery answer, a
//   DNS change):
//     targets that stay keep their state, new ones start healthy, gone ones are
//     dropped;
//   - drains the workers' passive reports (checks.passive) in order and counts
//   them with the
//     passive limits;
//   - runs the active probes that are due — each healthy target every
//   healthy.interval, each
//     unhealthy one every unhealthy.interval, the first one an interval after
//     the start — at most checks.active.concurrency of one upstream at a time:
//     an HTTP request on the control-loop client (http_client/) or a plain TCP
//     connect (tcp_probe.h), within checks.active.timeout;
//   - publishes a new HealthSnapshot into the upstream's HealthSlot when the
//   set of unhealthy
//     nodes changed. Workers skip those nodes at pick time; when every node is
//     unhealthy they use them all (fail-open), which is warned about here, at
//     most every Options::all_down_warn_ms per upstream.
//
// Target identity is lua-resty-healthcheck's (ip, port, hostname): port is
// checks.active.port when set (then one target stands for every node of that
// ip), hostname checks.active.host (or the ip). The probe's Host header is that
// hostname, or the node's domain name with pass_host: node. An upstream that
// keeps its key and its checks across a reload keeps its HealthSlot
// (proxy::UpstreamBuilder), hence its checker and every target's state here.
//
// Thread rules: control thread only (the loop given to the constructor).
#pragma once

#include <uv.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/specs.h"
#include "http_client/client.h"
#include "upstream/health_slot.h"
#include "upstream/health_view.h"
#include "upstream/node_set_slot.h"

namespace turnpike::health {

// One upstream with checks, as the snapshot describes it.
struct Binding {
  std::string name;  // "/apisix/upstreams/1", "/apisix/routes/r1", ...
  std::shared_ptr<const config::HealthChecksSpec> checks;
  upstream::NodeSetSlotSharedPtr nodes;
  upstream::HealthSlotSharedPtr health;
  bool pass_host_node = false;  // probes send the node's domain as Host
};

// One checked target, for apisix_upstream_status{name, ip, port}.
struct TargetStatus {
  std::string name;
  std::string ip;
  int port = 0;
  bool healthy = true;  // healthy or mostly_healthy
};

class HealthChecker final : public upstream::HealthView {
 public:
  struct Options {
    uint64_t tick_ms = 100;             // how often first use, node changes and reports are seen
    uint64_t all_down_warn_ms = 10000;  // fail-open warnings, per upstream
  };
  struct Stats {
    uint64_t probes = 0;       // active probes started
    uint64_t passive = 0;      // passive reports received for a node of the current set
    uint64_t published = 0;    // health snapshots stored
    uint64_t transitions = 0;  // targets that crossed healthy <-> unhealthy
  };

  HealthChecker(uv_loop_t* loop, Options options);
  explicit HealthChecker(uv_loop_t* loop) : HealthChecker(loop, Options{}) {}
  // REQUIRES: Stop() was called and the loop ran its close callbacks (or
  // Start() never was).
  ~HealthChecker() override;
  HealthChecker(const HealthChecker&) = delete;
  HealthChecker& operator=(const HealthChecker&) = delete;

  void Start();
  // Cancels the probes in flight and closes the timer. Idempotent.
  void Stop();

  // The upstreams with checks of the snapshot just published (all of them:
  // checkers of slots missing here are dropped, with their targets).
  void Apply(std::vector<Binding> bindings);

  // Runs one tick now (tests; the timer calls it every tick_ms).
  void Tick();

  // Every target of every started checker, in config order.
  std::vector<TargetStatus> Statuses() const;

  // upstream::HealthView
  std::string AllJson() const override;
  std::optional<std::string> OneJson(std::string_view name) const override;

  const Stats& stats() const { return stats_; }
  size_t checkers() const { return checkers_.size(); }

 private:
  struct Checker;
  struct Target;

  void UpdateTimer();  // the tick runs only while some upstream has checks
  void StartChecker(Checker* c, uint64_t now);
  void Retarget(Checker* c, uint64_t now);
  void DrainPassive(Checker* c);
  void RunProbes(Checker* c, uint64_t now);
  void Probe(Checker* c, Target* t);
  void OnProbeDone(Checker* c, Target* t, upstream::Outcome outcome, int status);
  void Count(Checker* c, Target* t, upstream::Outcome outcome, int limit, const char* source);
  void Publish(Checker* c, uint64_t now);
  std::string CheckerJson(const Checker& c) const;

  uv_loop_t* loop_;
  Options options_;
  uv_timer_t tick_{};
  bool started_ = false;
  bool stopped_ = false;
  http_client::Client client_;
  std::vector<std::unique_ptr<Checker>> checkers_;  // in config order
  Stats stats_;
};

}  // namespace turnpike::health
