// apisix.json (`config_provider: json`): same collections and item rules as apisix.yaml.
#include <gtest/gtest.h>

#include "config/loader.h"
#include "config_test_util.h"

namespace turnpike::config {
namespace {

using testing::Strings;
using Lines = std::vector<std::string>;
using Json = nlohmann::json;

LoadResult<RoutesConfig> Parse(const std::string& text) {
  return ParseRoutesConfigJson(text, "apisix.json");
}

constexpr const char* kSample = R"({
  "routes": [
    {
      "id": 1,
      "uri": "/hello",
      "hosts": ["Example.com"],
      "methods": ["GET"],
      "plugins": {
        "limit-count": {"count": 2, "time_window": 60.5, "key": "remote_addr", "x": null},
        "cors": {}
      },
      "upstream_id": "u1"
    },
    {"uris": ["/a", "/b"], "service_id": 2, "vars": [["arg_v", "==", "1"]]}
  ],
  "upstreams": [
	{"id": "u1", "nodes": {"127.0.0.1:1980": 1}, "type": "roundrobin"}
  ],
  "services": [{"id": 2, "upstream_id": "u1", "plugins": {"echo": {"body": "\ud83d\ude00 \u00e9"}}}],
  "plugin_configs": [{"id": "pc", "plugins": {"prometheus": {"prefer_name": true}}}],
  "global_rules": [{"id": "g", "plugins": {"request-id": {}}}],
  "plugins": [{"name": "limit-count"}, {"name": "cors"}, {"name": "mqtt-proxy", "stream": true}]
}
)";

TEST(JsonProviderTest, LoadsEveryCollection) {
  auto r = Parse(kSample);
  ASSERT_TRUE(r.value.has_value()) << ::testing::PrintToString(Strings(r.errors));
  EXPECT_TRUE(r.errors.empty()) << ::testing::PrintToString(Strings(r.errors));
  EXPECT_TRUE(r.warnings.empty()) << ::testing::PrintToString(Strings(r.warnings));
  const RoutesConfig& c = *r.value;
  EXPECT_EQ(c.file, "apisix.json");
  ASSERT_EQ(c.routes.size(), 2u);
  const RouteSpec& r1 = c.routes[0];
  EXPECT_EQ(r1.id, "1");
  EXPECT_EQ(r1.hosts, (Lines{"example.com"}));
  EXPECT_EQ(r1.loc.line, 3);
  EXPECT_EQ(r1.loc.col, 5);
  ASSERT_EQ(r1.plugins.size(), 2u);
  EXPECT_EQ(r1.plugins[0].name, "limit-count");
  EXPECT_EQ(r1.plugins[0].conf,
            Json::parse(R"({"count": 2, "time_window": 60.5, "key": "remote_addr", "x": null})"));
  EXPECT_TRUE(r1.plugins[0].conf["count"].is_number_integer());
  EXPECT_EQ(r1.plugins[0].loc.line, 9);
  EXPECT_EQ(r1.plugins[0].loc.col, 9);
  EXPECT_EQ(r1.plugins[0].path, "routes[0].plugins.limit-count");
  EXPECT_EQ(c.routes[1].id, "arr_2");
  EXPECT_EQ(c.routes[1].service_id, "2");
  ASSERT_TRUE(c.routes[1].vars.has_value());
  EXPECT_EQ(c.routes[1].vars->expr, Json::parse(R"([["arg_v", "==", "1"]])"));
  ASSERT_EQ(c.upstreams.size(), 1u);
  EXPECT_EQ(c.upstreams[0].nodes.at(0).port, 1980);
  EXPECT_EQ(c.upstreams[0].loc.line, 17);  // after a tab-indented line
  ASSERT_EQ(c.services.size(), 1u);
  EXPECT_EQ(c.services[0].plugins.at(0).conf["body"], "\xF0\x9F\x98\x80 \xC3\xA9");
  ASSERT_EQ(c.plugin_configs.size(), 1u);
  ASSERT_EQ(c.global_rules.size(), 1u);
  ASSERT_TRUE(c.enabled_plugins.has_value());
  EXPECT_EQ(*c.enabled_plugins, (Lines{"limit-count", "cors"}));
}

TEST(JsonProviderTest, NoEndFlagNeeded) {
  auto r = Parse(R"({"routes": []})");
  ASSERT_TRUE(r.value.has_value());
  EXPECT_TRUE(r.errors.empty());
  auto empty_object = Parse("{}");
  ASSERT_TRUE(empty_object.value.has_value());
  EXPECT_TRUE(empty_object.value->routes.empty());
}

// As in apisix.yaml, a collection that is not a list rejects the whole file; null and `{}`
// are empty.
TEST(JsonProviderTest, CollectionThatIsNotAListRejectsTheFile) {
  auto map = Parse("{\n  \"upstreams\": [],\n  \"routes\": {\"uri\": \"/x\"}\n}");
  EXPECT_FALSE(map.value.has_value());
  EXPECT_EQ(Strings(map.errors),
            (Lines{"apisix.json:3:13: routes: wrong type: expected list, got map; the file is "
                   "rejected"}));
  for (const char* value : {"5", "\"abc\"", "true", "{\"a\": []}"}) {
    for (const char* key : {"routes", "services", "global_rules", "plugins", "plugin_metadata"}) {
      SCOPED_TRACE(std::string(key) + ": " + value);
      auto r = Parse(std::string("{\"") + key + "\": " + value + "}");
      EXPECT_FALSE(r.value.has_value());
      ASSERT_EQ(r.errors.size(), 1u) << ::testing::PrintToString(Strings(r.errors));
      EXPECT_EQ(r.errors[0].path, key);
    }
  }
  for (const char* value : {"null", "{}", "[]"}) {
    SCOPED_TRACE(value);
    auto r = Parse(std::string("{\"routes\": ") + value + ", \"upstreams\": [{\"nodes\": {}}]}");
    ASSERT_TRUE(r.value.has_value()) << ::testing::PrintToString(Strings(r.errors));
    EXPECT_TRUE(r.errors.empty()) << ::testing::PrintToString(Strings(r.errors));
    EXPECT_TRUE(r.value->routes.empty());
    EXPECT_EQ(r.value->upstreams.size(), 1u);
  }
}

TEST(JsonProviderTest, ItemErrorsHaveJsonPositions) {
  auto r = Parse(R"({
  "routes": [
    {"uri": "/a", "upstream_id": 1},
    {"uri": 5, "upstream_id": 1},
    {"uri": "/c", "upstream_id": 1, "remote_addr": "1.2.3.4/40"},
    {"uri": "/d", "bogus": true, "upstream_id": 1}
  ],
  "consumers": []
})");
  ASSERT_TRUE(r.value.has_value());
  ASSERT_EQ(r.value->routes.size(), 1u);
  EXPECT_EQ(Strings(r.errors),
            (Lines{
                "apisix.json:4:13: routes[1].uri: wrong type: expected string, got integer",
                "apisix.json:5:52: routes[2].remote_addr: invalid IP address or CIDR "
                "\"1.2.3.4/40\"",
                "apisix.json:6:19: routes[3].bogus: unknown field",
            }));
  EXPECT_EQ(Strings(r.warnings),
            (Lines{"apisix.json:8:3: consumers: not supported yet, ignored"}));
}

TEST(JsonProviderTest, InvalidJsonRejectsTheFile) {
  auto trailing_comma = Parse("{\n  \"routes\": [],\n}\n");
  EXPECT_FALSE(trailing_comma.value.has_value());
  ASSERT_EQ(trailing_comma.errors.size(), 1u);
  EXPECT_EQ(trailing_comma.errors[0].ToString(),
            "apisix.json:3:1: invalid JSON: syntax error while parsing object key - unexpected "
            "'}'; expected string literal");

  // YAML that is not JSON is rejected too.
  auto yaml = Parse("routes:\n  - uri: /a\n");
  EXPECT_FALSE(yaml.value.has_value());
  ASSERT_EQ(yaml.errors.size(), 1u);
  EXPECT_EQ(yaml.errors[0].message.rfind("invalid JSON: ", 0), 0u) << yaml.errors[0].message;
  EXPECT_EQ(yaml.errors[0].loc.line, 1);

  auto empty = Parse("");
  EXPECT_FALSE(empty.value.has_value());
  EXPECT_EQ(Strings(empty.errors),
            (Lines{"apisix.json:1:1: invalid JSON: syntax error while parsing value - unexpected "
                   "end of input; expected '[', '{', or a literal"}));

  auto list = Parse("[1, 2]");
  EXPECT_FALSE(list.value.has_value());
  EXPECT_EQ(Strings(list.errors),
            (Lines{"apisix.json:1:1: top level must be a map, got list"}));

  EXPECT_EQ(Strings(Parse(R"({"a": 1e999999})").errors),
            (Lines{"apisix.json: invalid JSON: number overflow parsing '1e999999'"}));

  auto lone_surrogate = Parse(R"({"a": "\ud83d"})");
  EXPECT_FALSE(lone_surrogate.value.has_value());
  EXPECT_EQ(lone_surrogate.errors.size(), 1u);
}

TEST(JsonProviderTest, EnvSubstitutionAfterParsing) {
  testing::ScopedEnv port("TP_CFG_JSON_PORT", "8080");
  testing::ScopedEnv flag("TP_CFG_JSON_FLAG", "true");
  testing::ScopedEnv ratio("TP_CFG_JSON_RATIO", " 0.25 ");
  testing::ScopedEnv name("TP_CFG_JSON_NAME", "say \"hi\"");
  testing::ScopedEnv unset("TP_CFG_JSON_UNSET", std::nullopt);
  auto r = Parse(R"({
  "routes": [{
    "uri": "/${{TP_CFG_JSON_UNSET:=x}}",
    "name": "${{TP_CFG_JSON_NAME}}",
    "upstream": {"nodes": [{"host": "10.0.0.1", "port": "${{TP_CFG_JSON_PORT}}", "weight": 1}]},
    "enable_websocket": "${{TP_CFG_JSON_FLAG}}",
    "plugins": {"${{TP_CFG_JSON_UNSET:=limit-count}}": {
      "n": "${{TP_CFG_JSON_PORT}}", "r": "${{TP_CFG_JSON_RATIO}}",
      "s": "port ${{TP_CFG_JSON_PORT}}", "t": "8080", "${{TP_CFG_JSON_PORT}}": 1}}
  }]
})");
  ASSERT_TRUE(r.value.has_value()) << ::testing::PrintToString(Strings(r.errors));
  ASSERT_EQ(r.value->routes.size(), 1u) << ::testing::PrintToString(Strings(r.errors));
  const RouteSpec& route = r.value->routes[0];
  EXPECT_EQ(route.uris, (Lines{"/x"}));
  EXPECT_EQ(route.name, "say \"hi\"");
  EXPECT_EQ(route.upstream->nodes.at(0).port, 8080);  // the string became a number
  EXPECT_EQ(route.enable_websocket, true);            // and "true" a boolean
  ASSERT_EQ(route.plugins.size(), 1u);
  EXPECT_EQ(route.plugins[0].name, "limit-count");    // keys are substituted, stay strings
  EXPECT_EQ(route.plugins[0].conf,
            Json::parse(R"({"n": 8080, "r": 0.25, "s": "port 8080", "t": "8080", "8080": 1})"));

  auto missing = Parse("{\n  \"routes\": [{\"uri\": \"/a/${{TP_CFG_JSON_UNSET}}\"}]\n}");
  EXPECT_FALSE(missing.value.has_value());
  EXPECT_EQ(Strings(missing.errors),
            (Lines{"apisix.json:2:26: environment variable `TP_CFG_JSON_UNSET` is not set and "
                   "has no default (use ${{TP_CFG_JSON_UNSET:=value}})"}));
}

TEST(JsonProviderTest, ForPathPicksTheParserByExtension) {
  EXPECT_TRUE(IsJsonRoutesFile("conf/apisix.json"));
  EXPECT_TRUE(IsJsonRoutesFile("/etc/ROUTES.JSON"));
  EXPECT_FALSE(IsJsonRoutesFile("conf/apisix.yaml"));
  EXPECT_FALSE(IsJsonRoutesFile("json"));
  EXPECT_FALSE(IsJsonRoutesFile("apisix.json.bak"));
  auto json = ParseRoutesConfigForPath(R"({"routes": [{"uri": "/a", "upstream_id": 1}]})",
                                       "x/apisix.json");
  ASSERT_TRUE(json.value.has_value());
  EXPECT_EQ(json.value->routes.size(), 1u);
  auto yaml = ParseRoutesConfigForPath("routes: []\n", "x/apisix.yaml");
  EXPECT_EQ(Strings(yaml.errors), (Lines{"x/apisix.yaml: missing valid end flag `#END`"}));
}

}  // namespace
}  // namespace turnpike::config
