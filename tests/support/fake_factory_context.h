// A FactoryContext for tests that call PluginFactory::Create directly: a route owner, the
// metadata and attributes the test sets, a FakeClock, and a real metrics registry the test
// can render (test binaries using this link turnpike_metrics).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "metrics/registry.h"
#include "support/fake_clock.h"
#include "turnpike/factory_context.h"

namespace turnpike::testing {

class FakeFactoryContext final : public FactoryContext {
 public:
  explicit FakeFactoryContext(int workers = 1) : workers_(workers), registry_(workers) {}

  PluginOwner owner() const override { return {owner_kind, owner_id}; }
  const nlohmann::json& metadata() const override { return metadata_json; }
  const nlohmann::json& attr() const override { return attr_json; }
  Clock& clock() override { return fake_clock; }
  int worker_count() const override { return workers_; }
  MetricsRegistry& metrics() override { return registry_; }
  metrics::Registry& registry() { return registry_; }

  // A shared default for call sites that need no particular context. Not thread-safe.
  static FakeFactoryContext& Default() {
    static FakeFactoryContext* ctx = new FakeFactoryContext;
    return *ctx;
  }

  PluginOwnerKind owner_kind = PluginOwnerKind::kRoute;
  std::string owner_id = "1";
  nlohmann::json metadata_json = nlohmann::json::object();
  nlohmann::json attr_json = nlohmann::json::object();
  FakeClock fake_clock;

 private:
  int workers_;
  metrics::Registry registry_;
};

}  // namespace turnpike::testing
