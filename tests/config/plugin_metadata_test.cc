// apisix.yaml / apisix.json `plugin_metadata` and config.yaml `plugin_attr`.
#include <gtest/gtest.h>

#include "config/loader.h"
#include "config_test_util.h"

namespace turnpike::config {
namespace {

using testing::Strings;
using Lines = std::vector<std::string>;
using Json = nlohmann::json;

TEST(PluginMetadataTest, LoadsItemsKeyedByPluginName) {
  auto r = ParseRoutesConfig(R"(plugin_metadata:
  - id: prometheus
    disabled_labels: {http_status: [route]}
  - id: file-logger
    log_format: {host: "$host"}
    flag:
#END
)",
                             "apisix.yaml");
  ASSERT_TRUE(r.value.has_value());
  EXPECT_TRUE(r.errors.empty()) << ::testing::PrintToString(Strings(r.errors));
  EXPECT_TRUE(r.warnings.empty()) << ::testing::PrintToString(Strings(r.warnings));
  ASSERT_EQ(r.value->plugin_metadata.size(), 2u);
  const PluginMetadataSpec& p = r.value->plugin_metadata[0];
  EXPECT_EQ(p.id, "prometheus");
  EXPECT_EQ(p.fields, Json::parse(R"({"disabled_labels": {"http_status": ["route"]}})"));
  EXPECT_EQ(p.loc.line, 2);
  EXPECT_EQ(p.path, "plugin_metadata[0]");
  EXPECT_EQ(r.value->plugin_metadata[1].id, "file-logger");
  EXPECT_EQ(r.value->plugin_metadata[1].fields,
            Json::parse(R"({"log_format": {"host": "$host"}, "flag": null})"));
}

TEST(PluginMetadataTest, BadItemsAreSkippedWithAnError) {
  auto r = ParseRoutesConfig(R"(plugin_metadata:
  - 5
  - log_format: {}
  - id: ""
  - id: [a]
  - id: echo
    x: 1
  - id: echo
#END
)",
                             "apisix.yaml");
  ASSERT_TRUE(r.value.has_value());
  ASSERT_EQ(r.value->plugin_metadata.size(), 1u);
  EXPECT_EQ(r.value->plugin_metadata[0].id, "echo");
  Lines errors = Strings(r.errors);
  ASSERT_EQ(errors.size(), 5u) << ::testing::PrintToString(errors);
  EXPECT_EQ(errors[0],
            "apisix.yaml:2:5: plugin_metadata[0]: wrong type: expected map, got integer");
  EXPECT_EQ(errors[1], "apisix.yaml:3:5: plugin_metadata[1]: missing required field \"id\"");
  EXPECT_EQ(errors[2], "apisix.yaml:4:9: plugin_metadata[2].id: must not be empty");
  EXPECT_NE(errors[3].find("plugin_metadata[3].id: wrong type"), std::string::npos);
  EXPECT_NE(errors[4].find("plugin_metadata[5].id: duplicate id \"echo\""), std::string::npos);
}

TEST(PluginMetadataTest, JsonFormat) {
  auto r = ParseRoutesConfigJson(
      R"({"plugin_metadata": [{"id": "prometheus", "disabled_labels": {"a": ["b"]}}, 3]})",
      "apisix.json");
  ASSERT_TRUE(r.value.has_value());
  ASSERT_EQ(r.value->plugin_metadata.size(), 1u);
  EXPECT_EQ(r.value->plugin_metadata[0].fields,
            Json::parse(R"({"disabled_labels": {"a": ["b"]}})"));
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].path, "plugin_metadata[1]");
  EXPECT_NE(r.errors[0].message.find("wrong type"), std::string::npos);
}

TEST(PluginAttrTest, GatewayConfigKeepsEachPluginsObject) {
  testing::ScopedEnv no_worker_env{"APISIX_WORKER_PROCESSES", std::nullopt};
  auto r = ParseGatewayConfig(R"(plugin_attr:
  prometheus:
    export_uri: /metrics
    default_buckets: [1, 2]
  log-rotate:
)",
                              "conf/config.yaml", "conf", 2);
  ASSERT_TRUE(r.value.has_value()) << ::testing::PrintToString(Strings(r.errors));
  const GatewayConfig& g = *r.value;
  ASSERT_NE(g.PluginAttr("prometheus"), nullptr);
  EXPECT_EQ(*g.PluginAttr("prometheus"),
            Json::parse(R"({"export_uri": "/metrics", "default_buckets": [1, 2]})"));
  ASSERT_NE(g.PluginAttr("log-rotate"), nullptr);
  EXPECT_EQ(*g.PluginAttr("log-rotate"), Json::object());
  EXPECT_EQ(g.PluginAttr("echo"), nullptr);
}

TEST(PluginAttrTest, AnEntryThatIsNotAMapRejectsTheConfig) {
  testing::ScopedEnv no_worker_env{"APISIX_WORKER_PROCESSES", std::nullopt};
  auto r = ParseGatewayConfig("plugin_attr:\n  prometheus: {}\n  bad: 5\n", "conf/config.yaml",
                              "conf", 2);
  EXPECT_FALSE(r.value.has_value());
  EXPECT_EQ(
      Strings(r.errors),
      (Lines{"conf/config.yaml:3:8: plugin_attr.bad: wrong type: expected map, got integer"}));
}

}  // namespace
}  // namespace turnpike::config
