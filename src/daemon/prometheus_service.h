// PrometheusService: the prometheus plugin's export listener (reference §4.3), a control
// service: it listens on plugin_attr.prometheus.export_addr (127.0.0.1:9091) on the control
// thread's loop, never on a worker, and answers only `GET <export_uri>` (anything else 404)
// with the Prometheus text format: the metrics registry (every plugin's families, summed over
// the workers' cells) followed by the process gauges that come from the workers' counters.
//
// A scrape renders on the spot (APISIX renders every refresh_interval in a privileged
// process and serves the cached text; here the render is cheap enough and always fresh). It
// reads the workers' cells without stopping them: a worker takes a series table's mutex only
// to insert a label set it has never seen, so warm traffic never waits for a scrape.
//
// A port that cannot be bound is logged as an error and the daemon serves on without the
// exporter. Runs only under the daemon (`turnpike check` starts no control service), when
// prometheus is an enabled plugin and enable_export_server is true (false: APISIX's public-api
// route is not implemented, so nothing is served). Control thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "admin/status_server.h"
#include "daemon/control_service.h"
#include "health/health_checker.h"
#include "metrics/registry.h"

namespace turnpike::plugins::prometheus {
struct Attr;
}

namespace turnpike::daemon {

// The workers' counters, summed (proxy::WorkerStats).
struct ProcessCounters {
  uint64_t requests = 0;
  uint64_t accepted = 0;
  uint64_t refused = 0;  // accepted and closed at once (worker_connections)
  uint64_t active = 0;
  uint64_t in_flight = 0;  // requests between their head and their end
};

class PrometheusService final : public ControlService {
 public:
  // `attr`: plugin_attr.prometheus (null when absent), parsed at Start(), whose error stops
  // the daemon. `registry` outlives the service.
  // `upstream_status` (may be null): the health checker's targets, exported as
  // apisix_upstream_status{name, ip, port} (1 healthy or mostly healthy, 0 otherwise).
  PrometheusService(nlohmann::json attr, const metrics::Registry* registry,
                    std::function<ProcessCounters()> counters,
                    std::function<std::vector<health::TargetStatus>()> upstream_status = nullptr);
  ~PrometheusService() override;

  std::string_view name() const override { return "prometheus"; }
  Status Start(uv_loop_t* loop) override;
  void Stop() override {
    if (server_) server_->Close();
  }
  int port() const { return server_ ? server_->port() : 0; }

  // The whole exposition (also for tests).
  std::string Render();

 private:
  admin::HttpAnswer Answer(base::Method method, std::string_view path);

  nlohmann::json attr_json_;
  std::unique_ptr<plugins::prometheus::Attr> attr_;  // parsed at Start()
  const metrics::Registry* registry_;
  std::function<ProcessCounters()> counters_;
  std::function<std::vector<health::TargetStatus>()> upstream_status_;
  std::string hostname_;
  uint64_t warned_dropped_ = 0;  // dropped series already warned about
  std::unique_ptr<admin::StatusServer> server_;
};

}  // namespace turnpike::daemon
