// HealthService: the upstream health checker (health/health_checker.h) as a
// control service.
//
// Control hands it every snapshot it publishes (Apply): the upstreams with
// `checks` become the checker's bindings (none when
// apisix.disable_upstream_healthcheck is true: the snapshot build then gives no
// upstream a health slot). It never holds up /status/ready: targets start
// healthy, as in APISIX.
//
// Thread rules: control thread only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "daemon/control_service.h"
#include "health/health_checker.h"
#include "proxy/snapshot.h"

namespace turnpike::daemon {

class HealthService final : public ControlService {
 public:
  std::string_view name() const override { return "health checks"; }
  Status Start(uv_loop_t* loop) override;
  void Stop() override {
    if (checker_) checker_->Stop();
  }

  // Control thread, for every published snapshot.
  void Apply(const proxy::Snapshot& snapshot);

  // Null before Start(). The control API's view, and apisix_upstream_status's
  // source.
  const health::HealthChecker* checker() const { return checker_.get(); }

 private:
  std::unique_ptr<health::HealthChecker> checker_;
};

// The bindings of `snapshot`'s upstreams with a health slot, named as APISIX
// names checkers
// ("/apisix/" + the upstream's resource key).
std::vector<health::Binding> HealthBindings(const proxy::Snapshot& snapshot);

}  // namespace turnpike::daemon
