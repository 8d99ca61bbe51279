// BuildSnapshot: a plugin's `_meta` (APISIX's injected schema): `disable: true` turns the
// instance off, and a `disable` that is not a boolean is a configuration error of that plugin,
// not an exception out of the build (found by tests/fuzz/yaml_config_fuzz).
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "config/specs.h"
#include "proxy/plugin_registry.h"
#include "proxy/snapshot.h"

namespace turnpike::proxy {
namespace {

class NoOpPlugin final : public Plugin {
 public:
  uint32_t phases() const override { return kPhaseLog; }
};

class NoOpFactory final : public PluginFactory {
 public:
  std::string_view name() const override { return "noop"; }
  int priority() const override { return 1; }
  StatusOr<PluginConstSharedPtr> Create(const nlohmann::json& conf,
                                        FactoryContext&) const override {
    if (conf.contains("_meta")) return Status::Error("_meta was not removed");
    return PluginConstSharedPtr(std::make_shared<NoOpPlugin>());
  }
};

struct Built {
  SnapshotConstSharedPtr snap;
  BuildReport report;
};

// One route "/r" with the plugin `noop` configured as `conf`.
Built BuildWithPluginConf(const std::string& conf) {
  config::RouteSpec route;
  route.id = "r";
  route.uris = {"/r"};
  route.path = "routes[0]";
  config::PluginSpec plugin;
  plugin.name = "noop";
  plugin.conf = nlohmann::json::parse(conf);
  plugin.path = "routes[0].plugins.noop";
  route.plugins.push_back(plugin);
  config::RoutesConfig routes;
  routes.routes.push_back(route);
  config::GatewayConfig gateway;
  PluginRegistry registry;
  registry.Register(std::make_unique<NoOpFactory>());
  Built b;
  b.snap = BuildSnapshot({&gateway, &routes, nullptr, 1, &registry}, &b.report);
  return b;
}

TEST(SnapshotMetaTest, DisableTrueTurnsThePluginOff) {
  Built b = BuildWithPluginConf(R"({"_meta": {"disable": true}})");
  ASSERT_TRUE(b.report.errors.empty()) << b.report.errors[0].ToString();
  ASSERT_EQ(b.snap->routes.size(), 1u);
  EXPECT_TRUE(b.snap->routes[0].chain.entries.empty());
}

TEST(SnapshotMetaTest, DisableFalseKeepsThePluginWithoutMeta) {
  Built b = BuildWithPluginConf(R"({"_meta": {"disable": false}, "x": 1})");
  ASSERT_TRUE(b.report.errors.empty()) << b.report.errors[0].ToString();
  ASSERT_EQ(b.snap->routes.size(), 1u);
  EXPECT_EQ(b.snap->routes[0].chain.entries.size(), 1u);
}

TEST(SnapshotMetaTest, NonBooleanDisableIsAnErrorNotAnException) {
  for (const char* disable : {R"("yes")", "1", "null", "[]", "{}"}) {
    Built b;
    ASSERT_NO_THROW(
        b = BuildWithPluginConf(std::string(R"({"_meta": {"disable": )") + disable + "}}"))
        << disable;
    ASSERT_EQ(b.report.errors.size(), 1u) << disable;
    EXPECT_EQ(b.report.errors[0].path, "routes[0].plugins.noop");
    EXPECT_EQ(b.report.errors[0].message,
              std::string("failed to check the configuration of plugin noop err: property "
                          "\"_meta\" validation failed: property \"disable\" validation failed: "
                          "wrong type: expected boolean, got ") +
                  nlohmann::json::parse(disable).type_name())
        << disable;
    EXPECT_TRUE(b.snap->routes.empty()) << disable;  // the route is skipped
  }
}

}  // namespace
}  // namespace turnpike::proxy
