// ServiceHost: runs the process-scope services of the plugin kinds (include/turnpike/
// service.h). The daemon starts them when it starts serving (after the first snapshot, before
// any worker) and stops them on shutdown (after the workers); `turnpike check` never does.
//
// Control thread only.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "config/specs.h"
#include "proxy/plugin_registry.h"
#include "turnpike/clock.h"
#include "turnpike/metrics.h"
#include "turnpike/service.h"

namespace turnpike::daemon {

class ServiceHost {
 public:
  // All three outlive the host.
  ServiceHost(const config::GatewayConfig& gateway, Clock& clock, MetricsRegistry& metrics)
      : gateway_(gateway), clock_(clock), metrics_(metrics) {}
  ~ServiceHost() { StopAll(); }
  ServiceHost(const ServiceHost&) = delete;
  ServiceHost& operator=(const ServiceHost&) = delete;

  // Starts the service of every factory that has one, in registration order, each once (a
  // second call starts nothing). On a failure the services already started are stopped and
  // the error reads "plugin <name>: <message>".
  Status StartAll(const proxy::PluginRegistry& registry);
  // Stops the started services in reverse order. Idempotent.
  void StopAll();

  size_t running() const { return running_.size(); }

 private:
  const config::GatewayConfig& gateway_;
  Clock& clock_;
  MetricsRegistry& metrics_;
  bool started_ = false;
  std::vector<std::pair<std::string, Service*>> running_;  // plugin name, service
};

}  // namespace turnpike::daemon
