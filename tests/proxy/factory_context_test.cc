// The snapshot build hands every plugin instance its FactoryContext: the owning item, the
// plugin's plugin_metadata and plugin_attr, the clock, the worker count and the metrics
// registry.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "config/loader.h"
#include "metrics/registry.h"
#include "proxy/snapshot.h"
#include "support/fake_clock.h"
#include "turnpike/typed_factory.h"

namespace turnpike::proxy {
namespace {

struct Seen {
  std::string owner;  // "<kind>/<id>"
  nlohmann::json metadata;
  nlohmann::json attr;
  int64_t now_ms = 0;
  int workers = 0;
};

class SeenPlugin final : public Plugin {
 public:
  uint32_t phases() const override { return kPhaseLog; }
};

// Records every context and registers a counter, as a metrics-exporting plugin would.
class RecordingFactory final : public PluginFactory {
 public:
  explicit RecordingFactory(std::vector<Seen>* seen) : seen_(seen) {}
  std::string_view name() const override { return "rec"; }
  int priority() const override { return 1; }
  StatusOr<PluginConstSharedPtr> Create(const nlohmann::json&, FactoryContext& ctx) const override {
    PluginOwner owner = ctx.owner();
    seen_->push_back({std::string(PluginOwnerKindName(owner.kind)) + "/" + std::string(owner.id),
                      ctx.metadata(), ctx.attr(), ctx.clock().WallMs(), ctx.worker_count()});
    StatusOr<Counter*> c = ctx.metrics().AddCounter({"rec_total", "Recorded", {"owner"}});
    if (!c.ok()) return c.status();
    c.value()->Add(0, {owner.id});
    return PluginConstSharedPtr(std::make_shared<SeenPlugin>());
  }

 private:
  std::vector<Seen>* seen_;
};

constexpr char kRoutes[] = R"(routes:
  - id: r1
    uri: /a
    service_id: s1
    plugin_config_id: pc1
    plugins: {rec: {}}
services:
  - id: s1
    plugins: {rec: {}}
plugin_configs:
  - id: pc1
    plugins: {rec: {}}
global_rules:
  - id: g1
    plugins: {rec: {}}
plugin_metadata:
  - id: rec
    log_format: {host: "$host"}
  - id: other
    x: 1
#END
)";

TEST(FactoryContextTest, EveryInstanceGetsItsOwnerMetadataAndAttr) {
  config::LoadResult<config::RoutesConfig> routes = config::ParseRoutesConfig(kRoutes, "a.yaml");
  ASSERT_TRUE(routes.value.has_value());
  ASSERT_TRUE(routes.errors.empty()) << routes.errors[0].ToString();
  config::GatewayConfig gateway;
  gateway.worker_processes = 4;
  gateway.plugin_attr = {{"rec", nlohmann::json{{"export", true}}}};
  std::vector<Seen> seen;
  PluginRegistry registry;
  registry.Register(std::make_unique<RecordingFactory>(&seen));
  metrics::Registry metrics(4);
  testing::FakeClock clock;
  BuildInput input{&gateway, &*routes.value, nullptr, 1, &registry, &metrics, &clock};
  BuildReport report;
  SnapshotConstSharedPtr snap = BuildSnapshot(input, &report);
  ASSERT_TRUE(report.errors.empty()) << report.errors[0].ToString();
  std::vector<std::string> owners;
  for (const Seen& s : seen) {
    owners.push_back(s.owner);
    EXPECT_EQ(s.metadata, nlohmann::json::parse(R"({"log_format": {"host": "$host"}})"));
    EXPECT_EQ(s.attr, (nlohmann::json{{"export", true}}));
    EXPECT_EQ(s.now_ms, clock.WallMs());
    EXPECT_EQ(s.workers, 4);
  }
  EXPECT_EQ(owners, (std::vector<std::string>{"service/s1", "plugin_config/pc1", "global_rule/g1",
                                              "route/r1"}));
  EXPECT_EQ(metrics.RenderPrometheus(),
            "# HELP rec_total Recorded\n# TYPE rec_total counter\n"
            "rec_total{owner=\"g1\"} 1\nrec_total{owner=\"pc1\"} 1\n"
            "rec_total{owner=\"r1\"} 1\nrec_total{owner=\"s1\"} 1\n");
}

TEST(FactoryContextTest, AbsentMetadataAndAttrAreEmptyObjectsAndMetricsNeedNoRegistry) {
  config::LoadResult<config::RoutesConfig> routes = config::ParseRoutesConfig(
      "routes:\n  - {id: r1, uri: /a, plugins: {rec: {}}}\n#END\n", "a.yaml");
  ASSERT_TRUE(routes.value.has_value());
  config::GatewayConfig gateway;
  std::vector<Seen> seen;
  PluginRegistry registry;
  registry.Register(std::make_unique<RecordingFactory>(&seen));
  BuildReport report;
  BuildSnapshot({&gateway, &*routes.value, nullptr, 1, &registry}, &report);  // as `check`
  ASSERT_TRUE(report.errors.empty()) << report.errors[0].ToString();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].metadata, nlohmann::json::object());
  EXPECT_EQ(seen[0].attr, nlohmann::json::object());
  EXPECT_EQ(seen[0].workers, 1);
  EXPECT_GT(seen[0].now_ms, 1'600'000'000'000);  // the system clock
}

}  // namespace
}  // namespace turnpike::proxy
