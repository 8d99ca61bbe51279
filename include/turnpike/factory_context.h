// FactoryContext: what PluginFactory::Create() may know about the plugin instance it
// compiles, besides the instance's own configuration.
//
// Built by the snapshot build on the control thread, one per plugin instance; valid during
// Create() only (copy what must be kept: the views and references die with the call, the
// clock and metrics registry do not).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "turnpike/clock.h"
#include "turnpike/metrics.h"

namespace turnpike {

// The kind of config item whose `plugins:` holds the instance (APISIX's plugin owners).
enum class PluginOwnerKind {
  kRoute,
  kService,
  kGlobalRule,
  kPluginConfig,
  kConsumer,  // not loaded yet
};

// "route", "service", "global_rule", "plugin_config", "consumer".
inline std::string_view PluginOwnerKindName(PluginOwnerKind kind) {
  switch (kind) {
    case PluginOwnerKind::kRoute:
      return "route";
    case PluginOwnerKind::kService:
      return "service";
    case PluginOwnerKind::kGlobalRule:
      return "global_rule";
    case PluginOwnerKind::kPluginConfig:
      return "plugin_config";
    case PluginOwnerKind::kConsumer:
      return "consumer";
  }
  return "";
}

// The owning item: its kind and id (normalized to a string, as references compare). Together
// they identify an instance across reloads (limit-count's counters keep counting when the
// route's configuration is re-read).
struct PluginOwner {
  PluginOwnerKind kind = PluginOwnerKind::kRoute;
  std::string_view id;
};

class FactoryContext {
 public:
  virtual PluginOwner owner() const = 0;
  // The plugin's item of apisix.yaml's `plugin_metadata` (its fields without `id`); an empty
  // object when there is none. Changes with the routes file, like the instance's own config.
  virtual const nlohmann::json& metadata() const = 0;
  // `plugin_attr.<plugin name>` from config.yaml; an empty object when absent. Fixed for the
  // life of the process.
  virtual const nlohmann::json& attr() const = 0;
  // Lives as long as the process. The system clock in the daemon; a fake in tests.
  virtual Clock& clock() = 0;
  // Number of worker threads (worker indexes 0..worker_count-1); >= 1.
  virtual int worker_count() const = 0;
  // Lives as long as the process, like the handles it returns.
  virtual MetricsRegistry& metrics() = 0;

 protected:
  ~FactoryContext() = default;
};

}  // namespace turnpike
