// apisix.yaml: `plugins` objects on routes, services, plugin configs and global rules;
// plugin_configs, global_rules and the top-level plugin list.
#include <gtest/gtest.h>

#include "config/loader.h"
#include "config_test_util.h"

namespace turnpike::config {
namespace {

using testing::Strings;
using Lines = std::vector<std::string>;
using Json = nlohmann::json;

LoadResult<RoutesConfig> Parse(const std::string& text) {
  return ParseRoutesConfig(text, "apisix.yaml");
}

void ExpectClean(const LoadResult<RoutesConfig>& r) {
  ASSERT_TRUE(r.value.has_value());
  EXPECT_TRUE(r.errors.empty()) << ::testing::PrintToString(Strings(r.errors));
  EXPECT_TRUE(r.warnings.empty()) << ::testing::PrintToString(Strings(r.warnings));
}

void ExpectPlugin(const PluginSpec& p, const std::string& name, const std::string& conf,
                  int line, int col, const std::string& path) {
  EXPECT_EQ(p.name, name);
  EXPECT_EQ(p.conf, Json::parse(conf)) << p.conf.dump();
  EXPECT_EQ(p.loc.file, "apisix.yaml");
  EXPECT_EQ(p.loc.line, line) << name;
  EXPECT_EQ(p.loc.col, col) << name;
  EXPECT_EQ(p.path, path);
}

TEST(PluginsTest, EveryCarrierKeepsPluginsInFileOrderWithPositions) {
  auto r = Parse(R"(routes:
  - uri: /a
    plugins:
      proxy-rewrite:
        uri: /b
        headers: {set: {X-Id: "1"}}
      limit-count: {count: 2, time_window: 60, rejected_code: 503, policy: local}
      prometheus:
      "weird name": {}
services:
  - id: s1
    plugins:
      cors: {allow_origins: "*", max_age: 5.5, allow_credential: false}
plugin_configs:
  - id: pc1
    desc: shared
    labels: {team: a}
    plugins:
      ip-restriction: {whitelist: [10.0.0.0/8, "::1"]}
global_rules:
  - id: 1
    plugins:
      request-id: {include_in_response: yes}
      echo: {before_body: ~}
#END
)");
  ExpectClean(r);
  const RoutesConfig& c = *r.value;
  ASSERT_EQ(c.routes.size(), 1u);
  const std::vector<PluginSpec>& rp = c.routes[0].plugins;
  ASSERT_EQ(rp.size(), 4u);
  ExpectPlugin(rp[0], "proxy-rewrite", R"({"uri": "/b", "headers": {"set": {"X-Id": "1"}}})", 4,
               7, "routes[0].plugins.proxy-rewrite");
  ExpectPlugin(rp[1], "limit-count",
               R"({"count": 2, "time_window": 60, "rejected_code": 503, "policy": "local"})", 7,
               7, "routes[0].plugins.limit-count");
  ExpectPlugin(rp[2], "prometheus", "{}", 8, 7, "routes[0].plugins.prometheus");
  ExpectPlugin(rp[3], "weird name", "{}", 9, 7, "routes[0].plugins[\"weird name\"]");
  EXPECT_TRUE(rp[1].conf["count"].is_number_integer());

  ASSERT_EQ(c.services.size(), 1u);
  ASSERT_EQ(c.services[0].plugins.size(), 1u);
  ExpectPlugin(c.services[0].plugins[0], "cors",
               R"({"allow_origins": "*", "max_age": 5.5, "allow_credential": false})", 13, 7,
               "services[0].plugins.cors");

  ASSERT_EQ(c.plugin_configs.size(), 1u);
  const PluginConfigSpec& pc = c.plugin_configs[0];
  EXPECT_EQ(pc.id, "pc1");
  EXPECT_EQ(pc.path, "plugin_configs[0]");
  EXPECT_EQ(pc.loc.line, 15);
  ASSERT_EQ(pc.plugins.size(), 1u);
  ExpectPlugin(pc.plugins[0], "ip-restriction", R"({"whitelist": ["10.0.0.0/8", "::1"]})", 19,
               7, "plugin_configs[0].plugins.ip-restriction");

  ASSERT_EQ(c.global_rules.size(), 1u);
  const GlobalRuleSpec& gr = c.global_rules[0];
  EXPECT_EQ(gr.id, "1");
  EXPECT_EQ(gr.path, "global_rules[0]");
  EXPECT_EQ(gr.loc.line, 21);
  ASSERT_EQ(gr.plugins.size(), 2u);
  ExpectPlugin(gr.plugins[0], "request-id", R"({"include_in_response": true})", 23, 7,
               "global_rules[0].plugins.request-id");
  ExpectPlugin(gr.plugins[1], "echo", R"({"before_body": null})", 24, 7,
               "global_rules[0].plugins.echo");
}

TEST(PluginsTest, PluginConfigurationMustBeAMap) {
  auto r = Parse(R"(routes:
  - uri: /a
    upstream_id: 1
    plugins:
      limit-count: 5
      cors: [a]
      ok-one: {}
  - uri: /b
    plugins: limit-count
services:
  - plugins:
      echo: "x"
#END
)");
  ASSERT_TRUE(r.value.has_value());
  EXPECT_TRUE(r.value->routes.empty());
  EXPECT_TRUE(r.value->services.empty());
  EXPECT_EQ(Strings(r.errors),
            (Lines{
                "apisix.yaml:5:20: routes[0].plugins.limit-count: wrong type: expected map, got "
                "integer",
                "apisix.yaml:6:13: routes[0].plugins.cors: wrong type: expected map, got list",
                "apisix.yaml:9:14: routes[1].plugins: wrong type: expected map, got string",
                "apisix.yaml:12:13: services[0].plugins.echo: wrong type: expected map, got "
                "string",
            }));
}

TEST(PluginsTest, ProblemsInsideAConfigurationPointAtTheirKey) {
  auto r = Parse(R"(routes:
  - uri: /a
    plugins:
      proxy-rewrite:
        headers:
          X-A: 1
          X-A: 2
        rec: &r {self: *r}
#END
)");
  ASSERT_TRUE(r.value.has_value());
  EXPECT_TRUE(r.value->routes.empty());
  ASSERT_EQ(r.errors.size(), 2u) << ::testing::PrintToString(Strings(r.errors));
  EXPECT_EQ(r.errors[0].ToString(),
            "apisix.yaml:7:11: routes[0].plugins.proxy-rewrite.headers.X-A: duplicate key");
  EXPECT_EQ(r.errors[1].path.rfind("routes[0].plugins.proxy-rewrite.rec.self.self.", 0), 0u);
  EXPECT_EQ(r.errors[1].message, "nested more than 256 levels deep (a recursive alias?)");
}

TEST(PluginConfigsTest, IdAndPluginsAreRequired) {
  auto r = Parse(R"(plugin_configs:
  - desc: no id
    plugins: {}
  - id: pc2
  - id: pc3
    name: any string is fine
    plugins: {echo: {}}
    create_time: 1
    update_time: 2
    upstream_id: 1
  - id: pc4
    name: ""
    labels: {a: b}
    plugins: {}
  - id: pc5
    labels: {a: "b c"}
    plugins: {}
global_rules:
  - plugins: {}
  - id: g2
  - id: g3
    plugins: {}
    desc: not allowed
  - id: g4
    plugins: {}
    create_time: 1
#END
)");
  ASSERT_TRUE(r.value.has_value());
  ASSERT_EQ(r.value->plugin_configs.size(), 1u);
  EXPECT_EQ(r.value->plugin_configs[0].id, "pc4");
  ASSERT_EQ(r.value->global_rules.size(), 1u);
  EXPECT_EQ(r.value->global_rules[0].id, "g4");
  EXPECT_EQ(Strings(r.errors),
            (Lines{
                "apisix.yaml:2:5: plugin_configs[0]: missing required field \"id\"",
                "apisix.yaml:4:5: plugin_configs[1]: missing required field \"plugins\"",
                "apisix.yaml:10:5: plugin_configs[2].upstream_id: unknown field",
                "apisix.yaml:16:17: plugin_configs[4].labels.a: must not contain whitespace",
                "apisix.yaml:19:5: global_rules[0]: missing required field \"id\"",
                "apisix.yaml:20:5: global_rules[1]: missing required field \"plugins\"",
                "apisix.yaml:23:5: global_rules[2].desc: unknown field",
            }));
}

TEST(PluginConfigsTest, DuplicateIdsSkipTheLaterItem) {
  auto r = Parse(R"(plugin_configs:
  - {id: 1, plugins: {}}
  - {id: "1", plugins: {}}
global_rules:
  - {id: g, plugins: {}}
  - {id: g, plugins: {}}
#END
)");
  EXPECT_EQ(r.value->plugin_configs.size(), 1u);
  EXPECT_EQ(r.value->global_rules.size(), 1u);
  EXPECT_EQ(Strings(r.errors),
            (Lines{
                "apisix.yaml:3:5: plugin_configs[1].id: duplicate id \"1\" (first defined at line "
                "2), item skipped",
                "apisix.yaml:6:5: global_rules[1].id: duplicate id \"g\" (first defined at line "
                "5), item skipped",
            }));
}

TEST(EnabledPluginsTest, TopLevelListOverridesConfigYaml) {
  auto r = Parse(R"(plugins:
  - name: ip-restriction
  - name: limit-count
    stream: false
  - name: mqtt-proxy
    stream: true
  - name: ip-restriction
#END
)");
  ASSERT_TRUE(r.value.has_value());
  EXPECT_TRUE(r.errors.empty());
  ASSERT_TRUE(r.value->enabled_plugins.has_value());
  EXPECT_EQ(*r.value->enabled_plugins, (Lines{"ip-restriction", "limit-count"}));
  EXPECT_EQ(Strings(r.warnings),
            (Lines{"apisix.yaml:7:5: plugins[3]: duplicate plugin \"ip-restriction\", ignored"}));

  EXPECT_FALSE(Parse("routes: []\n#END\n").value->enabled_plugins.has_value());
  auto empty = Parse("plugins: []\n#END\n");
  ASSERT_TRUE(empty.value->enabled_plugins.has_value());
  EXPECT_TRUE(empty.value->enabled_plugins->empty());
  auto null = Parse("plugins:\n#  - name: cors\n#END\n");
  ASSERT_TRUE(null.value->enabled_plugins.has_value());
  EXPECT_TRUE(null.value->enabled_plugins->empty());
}

TEST(EnabledPluginsTest, AnyBadEntryRejectsTheWholeList) {
  auto r = Parse(R"(plugins:
  - name: cors
  - stream: true
  - name: ""
  - name: echo
    stream: "no"
    extra: 1
  - cors
routes:
  - {uri: /a, upstream_id: 1}
#END
)");
  ASSERT_TRUE(r.value.has_value());
  EXPECT_FALSE(r.value->enabled_plugins.has_value());
  EXPECT_EQ(r.value->routes.size(), 1u);
  EXPECT_EQ(Strings(r.errors),
            (Lines{
                "apisix.yaml:3:5: plugins[1]: missing required field \"name\"",
                "apisix.yaml:4:11: plugins[2].name: must not be empty",
                "apisix.yaml:6:13: plugins[3].stream: wrong type: expected boolean, got string",
                "apisix.yaml:8:5: plugins[4]: wrong type: expected map, got string",
                "apisix.yaml:1:1: plugins: invalid plugin list ignored; config.yaml's plugins "
                "stay enabled",
            }));
  EXPECT_EQ(Strings(r.warnings),
            (Lines{"apisix.yaml:7:5: plugins[3].extra: unknown key, ignored"}));
  // Not a list at all: the whole file is rejected (as for any top-level collection).
  auto not_a_list = Parse("plugins: {name: cors}\n#END\n");
  EXPECT_FALSE(not_a_list.value.has_value());
  EXPECT_EQ(Strings(not_a_list.errors),
            (Lines{"apisix.yaml:1:10: plugins: wrong type: expected list, got map; the file is "
                   "rejected"}));
}

}  // namespace
}  // namespace turnpike::config
