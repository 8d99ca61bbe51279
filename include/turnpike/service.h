// Service: process-scope state a plugin kind owns beyond any snapshot (shared rate-limit
// counters, a connection to Redis, a metrics exporter), with a lifecycle.
//
// A PluginFactory that needs one returns it from PluginFactory::service(). The daemon calls
// Start() once, on the control thread, after the first snapshot was built and before any
// worker serves a request, and Stop() once on shutdown, after the workers have stopped.
// `turnpike check` builds snapshots (so factories' Create runs) but never starts services.
// Plugin instances made before Start() (the first snapshot) must therefore not expect the
// service to be running until requests arrive.
#pragma once

#include <nlohmann/json.hpp>

#include "turnpike/clock.h"
#include "turnpike/metrics.h"
#include "turnpike/status.h"

namespace turnpike {

// What a service gets at Start(). Valid during Start() only; the objects it hands out
// (clock, metrics) live as long as the process.
class ServiceContext {
 public:
  virtual Clock& clock() = 0;
  virtual MetricsRegistry& metrics() = 0;
  // Number of worker threads (worker indexes 0..worker_count-1); >= 1.
  virtual int worker_count() const = 0;
  // `plugin_attr.<plugin name>` from config.yaml; an empty object when absent.
  virtual const nlohmann::json& attr() const = 0;

 protected:
  ~ServiceContext() = default;
};

class Service {
 public:
  virtual ~Service() = default;
  // Control thread, once. A failure stops the daemon before it serves (the message is
  // logged with the plugin's name).
  virtual Status Start(ServiceContext& ctx) = 0;
  // Control thread, once, and only after a successful Start(). Must not block for long: the
  // process is exiting.
  virtual void Stop() = 0;
};

}  // namespace turnpike
