// A reload keeps the plugin instances whose identity is unchanged (proxy/plugin_instances.h):
// plugin name, owner kind and id, conf after `_meta`, the plugin's plugin_metadata and
// plugin_attr, and the build's factory environment. Anything else changed, or an instance
// missing from the previous snapshot, gets a new instance from its factory.
#include "proxy/plugin_instances.h"

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "config/specs.h"
#include "metrics/registry.h"
#include "proxy/plugin_registry.h"
#include "proxy/snapshot.h"

namespace turnpike::proxy {
namespace {

using nlohmann::json;

class Counted final : public Plugin {
 public:
  uint32_t phases() const override { return kPhaseLog; }
};

// "counted": a new instance on every Create(); {"fail": true} fails.
class CountedFactory final : public PluginFactory {
 public:
  std::string_view name() const override { return "counted"; }
  int priority() const override { return 1; }
  StatusOr<PluginConstSharedPtr> Create(const json& conf, FactoryContext&) const override {
    ++calls;
    if (conf.is_object() && conf.value("fail", false)) return Status::Error("told to fail");
    return PluginConstSharedPtr(std::make_shared<Counted>());
  }
  mutable int calls = 0;
};

config::PluginSpec Spec(json conf) {
  config::PluginSpec p;
  p.name = "counted";
  p.conf = std::move(conf);
  p.path = "plugins.counted";
  return p;
}

config::RouteSpec Route(const std::string& id, json conf) {
  config::RouteSpec r;
  r.id = id;
  r.uris = {"/" + id};
  r.path = "routes[" + id + "]";
  r.plugins = {Spec(std::move(conf))};
  return r;
}

class PluginReuseTest : public ::testing::Test {
 protected:
  PluginReuseTest() {
    auto factory = std::make_unique<CountedFactory>();
    factory_ = factory.get();
    registry_.Register(std::move(factory));
  }

  // A reload: built with the last snapshot as `previous`.
  SnapshotConstSharedPtr Reload(bool expect_ok = true) {
    BuildReport report;
    SnapshotConstSharedPtr s = BuildSnapshot(
        {&gateway_, &routes_, last_.get(), ++version_, &registry_, &metrics_}, &report);
    if (expect_ok) {
      EXPECT_TRUE(report.errors.empty()) << report.errors[0].ToString();
    }
    stats_ = report.stats;
    errors_ = report.errors.size();
    last_ = s;
    return s;
  }
  // The instance of route `i`'s only plugin.
  static const Plugin* RoutePlugin(const Snapshot& s, size_t i) {
    return s.routes.at(i).chain.entries.at(0).plugin.get();
  }

  PluginRegistry registry_;
  CountedFactory* factory_ = nullptr;
  metrics::Registry metrics_{1};
  config::GatewayConfig gateway_;
  config::RoutesConfig routes_;
  SnapshotConstSharedPtr last_;
  uint64_t version_ = 0;
  BuildStats stats_;
  size_t errors_ = 0;
};

TEST_F(PluginReuseTest, AnUnchangedConfKeepsTheInstance) {
  routes_.routes = {Route("r1", {{"a", 1}, {"b", {1, 2}}}), Route("r2", {{"a", 1}})};
  SnapshotConstSharedPtr first = Reload();
  EXPECT_EQ(stats_.created_plugins, 2u);
  EXPECT_EQ(stats_.reused_plugins, 0u);
  // Read again from the file: new specs, equal values, keys in another order.
  routes_.routes = {Route("r1", json::parse(R"({"b": [1, 2], "a": 1})")), Route("r2", {{"a", 1}})};
  SnapshotConstSharedPtr second = Reload();
  EXPECT_EQ(RoutePlugin(*second, 0), RoutePlugin(*first, 0));
  EXPECT_EQ(RoutePlugin(*second, 1), RoutePlugin(*first, 1));
  EXPECT_NE(RoutePlugin(*second, 0), RoutePlugin(*second, 1));  // two owners, two instances
  EXPECT_EQ(stats_.reused_plugins, 2u);
  EXPECT_EQ(stats_.created_plugins, 0u);
  EXPECT_EQ(factory_->calls, 2);
  // And again: a kept instance is kept on the next reload too.
  SnapshotConstSharedPtr third = Reload();
  EXPECT_EQ(RoutePlugin(*third, 0), RoutePlugin(*first, 0));
  EXPECT_EQ(factory_->calls, 2);
}

TEST_F(PluginReuseTest, OnlyMetaChangedKeepsTheInstance) {
  routes_.routes = {Route("r1", {{"a", 1}})};
  SnapshotConstSharedPtr first = Reload();
  routes_.routes = {Route("r1", json::parse(R"({"a": 1, "_meta": {"disable": false}})"))};
  EXPECT_EQ(RoutePlugin(*Reload(), 0), RoutePlugin(*first, 0));
}

TEST_F(PluginReuseTest, AChangedConfGetsANewInstance) {
  routes_.routes = {Route("r1", {{"a", 1}}), Route("r2", {{"a", 1}})};
  SnapshotConstSharedPtr first = Reload();
  routes_.routes = {Route("r1", {{"a", 2}}), Route("r2", {{"a", 1}})};
  SnapshotConstSharedPtr second = Reload();
  EXPECT_NE(RoutePlugin(*second, 0), RoutePlugin(*first, 0));
  EXPECT_EQ(RoutePlugin(*second, 1), RoutePlugin(*first, 1));
  EXPECT_EQ(stats_.created_plugins, 1u);
  EXPECT_EQ(stats_.reused_plugins, 1u);
  // Values compare by type too: a schema may accept 2 and reject 2.0 or "2".
  routes_.routes = {Route("r1", {{"a", 2.0}}), Route("r2", {{"a", "1"}})};
  SnapshotConstSharedPtr third = Reload();
  EXPECT_NE(RoutePlugin(*third, 0), RoutePlugin(*second, 0));
  EXPECT_NE(RoutePlugin(*third, 1), RoutePlugin(*second, 1));
}

TEST_F(PluginReuseTest, InvalidUtf8InAConfIsComparedByteForByte) {
  // YAML strings may hold invalid UTF-8: neither an exception nor two strings made equal.
  routes_.routes = {Route("r1", {{"m", "a\xff"}})};
  SnapshotConstSharedPtr first = Reload();
  routes_.routes = {Route("r1", {{"m", "a\xff"}})};
  SnapshotConstSharedPtr second = Reload();
  EXPECT_EQ(RoutePlugin(*second, 0), RoutePlugin(*first, 0));
  routes_.routes = {Route("r1", {{"m", "a\xfe"}})};
  EXPECT_NE(RoutePlugin(*Reload(), 0), RoutePlugin(*second, 0));
}

TEST_F(PluginReuseTest, AnotherOwnerIdOrKindGetsANewInstance) {
  routes_.routes = {Route("r1", {{"a", 1}})};
  SnapshotConstSharedPtr first = Reload();
  routes_.routes = {Route("r9", {{"a", 1}})};  // the same conf under another id
  SnapshotConstSharedPtr second = Reload();
  EXPECT_NE(RoutePlugin(*second, 0), RoutePlugin(*first, 0));
  // The same id as a global rule: another owner.
  config::GlobalRuleSpec g;
  g.id = "r9";
  g.plugins = {Spec({{"a", 1}})};
  routes_.global_rules = {g};
  SnapshotConstSharedPtr third = Reload();
  EXPECT_EQ(RoutePlugin(*third, 0), RoutePlugin(*second, 0));
  EXPECT_NE(third->global_rules.at(0).entries.at(0).plugin.get(), RoutePlugin(*second, 0));
  EXPECT_EQ(stats_.created_plugins, 1u);
}

TEST_F(PluginReuseTest, ChangedMetadataOrAttrGetsANewInstance) {
  routes_.routes = {Route("r1", {{"a", 1}})};
  SnapshotConstSharedPtr first = Reload();
  config::PluginMetadataSpec m;
  m.id = "counted";
  m.fields = {{"log_format", {{"host", "$host"}}}};
  routes_.plugin_metadata = {m};
  SnapshotConstSharedPtr second = Reload();  // metadata added
  EXPECT_NE(RoutePlugin(*second, 0), RoutePlugin(*first, 0));
  SnapshotConstSharedPtr third = Reload();  // unchanged
  EXPECT_EQ(RoutePlugin(*third, 0), RoutePlugin(*second, 0));
  routes_.plugin_metadata[0].fields = {{"log_format", {{"host", "$uri"}}}};
  SnapshotConstSharedPtr fourth = Reload();  // metadata changed
  EXPECT_NE(RoutePlugin(*fourth, 0), RoutePlugin(*third, 0));
  // Another plugin's metadata is not this plugin's.
  config::PluginMetadataSpec other;
  other.id = "other";
  other.fields = {{"x", 1}};
  routes_.plugin_metadata.push_back(other);
  SnapshotConstSharedPtr fifth = Reload();
  EXPECT_EQ(RoutePlugin(*fifth, 0), RoutePlugin(*fourth, 0));

  gateway_.plugin_attr = {{"counted", json{{"export", true}}}};
  SnapshotConstSharedPtr sixth = Reload();  // attr added
  EXPECT_NE(RoutePlugin(*sixth, 0), RoutePlugin(*fifth, 0));
  gateway_.plugin_attr = {{"counted", json{{"export", false}}}};
  SnapshotConstSharedPtr seventh = Reload();  // attr changed
  EXPECT_NE(RoutePlugin(*seventh, 0), RoutePlugin(*sixth, 0));
  EXPECT_EQ(RoutePlugin(*Reload(), 0), RoutePlugin(*seventh, 0));
}

TEST_F(PluginReuseTest, RemovedThenAddedBackGetsANewInstance) {
  routes_.routes = {Route("r1", {{"a", 1}}), Route("r2", {{"a", 1}})};
  SnapshotConstSharedPtr first = Reload();
  const Plugin* r1 = RoutePlugin(*first, 0);
  routes_.routes = {Route("r2", {{"a", 1}})};
  Reload();
  routes_.routes = {Route("r1", {{"a", 1}}), Route("r2", {{"a", 1}})};
  SnapshotConstSharedPtr third = Reload();
  EXPECT_NE(RoutePlugin(*third, 0), r1);
  EXPECT_EQ(RoutePlugin(*third, 1), RoutePlugin(*first, 1));
  // Likewise a route skipped for an error of its own (here an invalid remote_addrs): its
  // instance is not part of that snapshot.
  const Plugin* before = RoutePlugin(*third, 0);
  routes_.routes[0].remote_addrs = {"not an address"};
  Reload(/*expect_ok=*/false);
  EXPECT_EQ(errors_, 1u);
  routes_.routes[0].remote_addrs.clear();
  EXPECT_NE(RoutePlugin(*Reload(), 0), before);
}

TEST_F(PluginReuseTest, AFailingConfKeepsFailing) {
  routes_.routes = {Route("r1", {{"fail", true}}), Route("r2", {{"a", 1}})};
  Reload(/*expect_ok=*/false);
  EXPECT_EQ(errors_, 1u);
  EXPECT_EQ(factory_->calls, 2);
  Reload(/*expect_ok=*/false);  // the same file again: the factory is asked again, and fails
  EXPECT_EQ(errors_, 1u);
  EXPECT_EQ(factory_->calls, 3);
  EXPECT_EQ(stats_.reused_plugins, 1u);
  EXPECT_EQ(stats_.created_plugins, 0u);
  ASSERT_EQ(last_->routes.size(), 1u);
  EXPECT_EQ(last_->routes[0].id, "r2");
}

TEST_F(PluginReuseTest, AServicesInstanceStaysOneInstanceInItsRoutes) {
  config::ServiceSpec service;
  service.id = "s1";
  service.plugins = {Spec({{"a", 1}})};
  routes_.services = {service};
  config::RouteSpec r1 = Route("r1", {});
  r1.plugins.clear();
  r1.service_id = "s1";
  config::RouteSpec r2 = r1;
  r2.id = "r2";
  r2.uris = {"/r2"};
  routes_.routes = {r1, r2};
  SnapshotConstSharedPtr first = Reload();
  EXPECT_EQ(RoutePlugin(*first, 0), RoutePlugin(*first, 1));
  EXPECT_EQ(stats_.created_plugins, 1u);
  SnapshotConstSharedPtr second = Reload();
  EXPECT_EQ(RoutePlugin(*second, 0), RoutePlugin(*first, 0));
  EXPECT_EQ(RoutePlugin(*second, 1), RoutePlugin(*first, 0));
  EXPECT_EQ(stats_.reused_plugins, 1u);
  EXPECT_EQ(factory_->calls, 1);
}

TEST_F(PluginReuseTest, AnotherFactoryEnvironmentKeepsNothing) {
  routes_.routes = {Route("r1", {{"a", 1}})};
  SnapshotConstSharedPtr first = Reload();
  // Without a metrics registry the build makes one of its own, which dies with it: an
  // instance holding its handles must not outlive it.
  BuildReport report;
  SnapshotConstSharedPtr second =
      BuildSnapshot({&gateway_, &routes_, first.get(), ++version_, &registry_}, &report);
  EXPECT_NE(RoutePlugin(*second, 0), RoutePlugin(*first, 0));
  metrics::Registry other(1);
  SnapshotConstSharedPtr third =
      BuildSnapshot({&gateway_, &routes_, first.get(), ++version_, &registry_, &other}, &report);
  EXPECT_NE(RoutePlugin(*third, 0), RoutePlugin(*first, 0));
  gateway_.worker_processes = 3;
  SnapshotConstSharedPtr fourth =
      BuildSnapshot({&gateway_, &routes_, first.get(), ++version_, &registry_, &metrics_}, &report);
  EXPECT_NE(RoutePlugin(*fourth, 0), RoutePlugin(*first, 0));
}

TEST(PluginInstancesTest, EncodingIsTypeStrictAndUnambiguous) {
  auto encoded = [](const json& v) {
    std::string out;
    PluginInstances::AppendEncoded(&out, v);
    return out;
  };
  EXPECT_EQ(encoded(json::parse(R"({"b": 1, "a": [true, null]})")),
            encoded(json::parse(R"({"a": [true, null], "b": 1})")));
  EXPECT_NE(encoded(1), encoded(1.0));
  EXPECT_EQ(encoded(1), encoded(1u));  // the parser's 1 is unsigned, a literal's signed
  EXPECT_NE(encoded(-1), encoded(1u));
  EXPECT_NE(encoded(0.0), encoded(-0.0));
  EXPECT_NE(encoded("1"), encoded(1));
  EXPECT_NE(encoded(json::array({"ab", "c"})), encoded(json::array({"a", "bc"})));
  EXPECT_NE(encoded(json{{"a", "b"}}), encoded(json::array({"a", "b"})));
  std::string a, b;
  PluginInstances::AppendIdentity(&a, {PluginOwnerKind::kRoute, "1"}, "x", json::object());
  PluginInstances::AppendIdentity(&b, {PluginOwnerKind::kService, "1"}, "x", json::object());
  EXPECT_NE(a, b);
}

TEST(PluginInstancesTest, FindsWhatWasAddedAndNothingTruncated) {
  PluginInstances instances;
  auto p1 = std::make_shared<Counted>();
  auto p2 = std::make_shared<Counted>();
  auto p3 = std::make_shared<Counted>();
  instances.Add("one", PluginInstances::Hash("one"), p1);
  instances.Add("two", PluginInstances::Hash("two"), p2);
  size_t mark = instances.size();
  instances.Add("three", PluginInstances::Hash("three"), p3);
  instances.Truncate(mark);
  instances.Add("four", 7, p3);  // a hash shared with "seven"
  instances.Add("seven", 7, p1);
  instances.Seal();
  auto find = [&](std::string_view key, uint64_t hash) -> const Plugin* {
    const PluginConstSharedPtr* found = instances.Find(key, hash);
    return found != nullptr ? found->get() : nullptr;
  };
  EXPECT_EQ(find("one", PluginInstances::Hash("one")), p1.get());
  EXPECT_EQ(find("two", PluginInstances::Hash("two")), p2.get());
  EXPECT_EQ(find("three", PluginInstances::Hash("three")), nullptr);
  EXPECT_EQ(find("four", 7), p3.get());
  EXPECT_EQ(find("seven", 7), p1.get());
  EXPECT_EQ(find("eight", 7), nullptr);
}

}  // namespace
}  // namespace turnpike::proxy
