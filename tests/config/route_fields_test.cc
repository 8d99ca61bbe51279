// apisix.yaml: route fields beyond matching basics (remote addresses, vars, references,
// websocket, labels) and services.
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
LoadResult<RoutesConfig> ParseRoutes(const std::string& items) {
  return Parse("routes:\n" + items + "#END\n");
}

TEST(RouteFieldsTest, CarriedFields) {
  auto r = ParseRoutes(R"(  - id: r1
    uri: /a
    remote_addrs: [10.0.0.0/8, "::1", 2001:db8::/48, 192.168.1.7]
    vars: [[arg_a, "==", "1"], ["http_x", "~~", "^v[0-9]+$"], [cookie_c, "!", "in", [1, 2.5]]]
    service_id: 7
    plugin_config_id: pc.1
    enable_websocket: true
    labels: {env: prod, team: edge}
  - uri: /b
    remote_addr: 127.0.0.1
    vars: []
    upstream_id: u
)");
  ASSERT_TRUE(r.value.has_value());
  EXPECT_TRUE(r.errors.empty()) << ::testing::PrintToString(Strings(r.errors));
  EXPECT_TRUE(r.warnings.empty()) << ::testing::PrintToString(Strings(r.warnings));
  ASSERT_EQ(r.value->routes.size(), 2u);
  const RouteSpec& a = r.value->routes[0];
  EXPECT_EQ(a.path, "routes[0]");
  EXPECT_EQ(a.remote_addrs, (Lines{"10.0.0.0/8", "::1", "2001:db8::/48", "192.168.1.7"}));
  ASSERT_TRUE(a.vars.has_value());
  EXPECT_EQ(a.vars->expr, Json::parse(R"([["arg_a", "==", "1"], ["http_x", "~~", "^v[0-9]+$"],
                                          ["cookie_c", "!", "in", [1, 2.5]]])"));
  EXPECT_EQ(a.vars->path, "routes[0].vars");
  EXPECT_EQ(a.vars->loc.line, 5);
  EXPECT_EQ(a.vars->loc.col, 11);
  EXPECT_EQ(a.service_id, "7");
  EXPECT_EQ(a.plugin_config_id, "pc.1");
  EXPECT_EQ(a.enable_websocket, true);
  EXPECT_EQ(a.labels, (std::vector<std::pair<std::string, std::string>>{{"env", "prod"},
                                                                         {"team", "edge"}}));
  EXPECT_EQ(a.upstream_id, "");
  EXPECT_TRUE(a.plugins.empty());

  const RouteSpec& b = r.value->routes[1];
  EXPECT_EQ(b.path, "routes[1]");
  EXPECT_EQ(b.remote_addrs, (Lines{"127.0.0.1"}));
  ASSERT_TRUE(b.vars.has_value());
  EXPECT_EQ(b.vars->expr, Json::array());
  EXPECT_FALSE(b.enable_websocket.has_value());  // unset: the service's applies
  EXPECT_EQ(b.service_id, "");
  EXPECT_EQ(b.plugin_config_id, "");
  EXPECT_FALSE(r.value->routes[1].labels.size());
}

TEST(RouteFieldsTest, RemoteAddrValidation) {
  auto r = ParseRoutes(R"(  - uri: /a
    upstream_id: 1
    remote_addr: 10.0.0.1/33
  - uri: /b
    upstream_id: 1
    remote_addrs: []
  - uri: /c
    upstream_id: 1
    remote_addrs: [1.2.3.4, 1.2.3.4, "1.2.3", "::1/200", 10.0.0.0/24, 5]
  - uri: /d
    upstream_id: 1
    remote_addrs: 1.2.3.4
  - uri: /e
    upstream_id: 1
    remote_addr: [1.2.3.4]
)");
  ASSERT_TRUE(r.value.has_value());
  EXPECT_TRUE(r.value->routes.empty());
  EXPECT_EQ(Strings(r.errors),
            (Lines{
                "apisix.yaml:4:18: routes[0].remote_addr: invalid IP address or CIDR "
                "\"10.0.0.1/33\"",
                "apisix.yaml:7:19: routes[1].remote_addrs: must not be empty",
                "apisix.yaml:10:29: routes[2].remote_addrs[1]: duplicate item \"1.2.3.4\"",
                "apisix.yaml:10:38: routes[2].remote_addrs[2]: invalid IP address or CIDR "
                "\"1.2.3\"",
                "apisix.yaml:10:47: routes[2].remote_addrs[3]: invalid IP address or CIDR "
                "\"::1/200\"",
                "apisix.yaml:10:71: routes[2].remote_addrs[5]: wrong type: expected string, got "
                "integer",
                "apisix.yaml:13:19: routes[3].remote_addrs: wrong type: expected list, got "
                "string",
                "apisix.yaml:16:18: routes[4].remote_addr: wrong type: expected string, got list",
            }));
}

TEST(RouteFieldsTest, VarsMustBeAList) {
  auto r = ParseRoutes(R"(  - uri: /a
    upstream_id: 1
    vars: {arg_a: 1}
  - uri: /b
    upstream_id: 1
    vars: "arg_a == 1"
  - uri: /c
    upstream_id: 1
    vars: [[arg_a, "==", {[x]: 1}]]
)");
  EXPECT_TRUE(r.value->routes.empty());
  EXPECT_EQ(Strings(r.errors),
            (Lines{
                "apisix.yaml:4:11: routes[0].vars: wrong type: expected list, got map",
                "apisix.yaml:7:11: routes[1].vars: wrong type: expected list, got string",
                "apisix.yaml:10:27: routes[2].vars[0][2]: map keys must be strings",
            }));
}

TEST(RouteFieldsTest, ScriptExcludesPluginsAndPluginConfig) {
  auto r = ParseRoutes(R"(  - uri: /a
    script: "local _M = {} return _M"
    plugins: {}
    plugin_config_id: 1
)");
  EXPECT_TRUE(r.value->routes.empty());
  EXPECT_EQ(Strings(r.errors),
            (Lines{
                "apisix.yaml:3:5: routes[0].script: \"script\" cannot be used with \"plugins\"",
                "apisix.yaml:3:5: routes[0].script: \"script\" cannot be used with "
                "\"plugin_config_id\"",
            }));
}

TEST(RouteFieldsTest, RouteWithOnlyAServiceIsValid) {
  auto r = Parse(R"(services:
  - id: s
    hosts: [a.example.com]
    upstream_id: u
routes:
  - uri: /a
    service_id: s
#END
)");
  ASSERT_EQ(r.value->routes.size(), 1u);
  EXPECT_TRUE(r.value->routes[0].hosts.empty());  // inherited later, from the service
  EXPECT_EQ(r.value->routes[0].service_id, "s");
  EXPECT_TRUE(r.errors.empty());
}

TEST(ServicesTest, AllFields) {
  auto r = Parse(R"(services:
  - id: 1
    name: backend
    desc: the backend
    labels: {tier: web}
    hosts: [API.Example.com, "*.example.org"]
    upstream:
      id: ignored
      nodes: {"10.0.0.1:80": 1}
    plugins:
      limit-count: {count: 1}
    enable_websocket: true
    create_time: 1
    update_time: 2
  - upstream_id: 3
#END
)");
  ASSERT_TRUE(r.value.has_value());
  EXPECT_TRUE(r.errors.empty()) << ::testing::PrintToString(Strings(r.errors));
  EXPECT_TRUE(r.warnings.empty()) << ::testing::PrintToString(Strings(r.warnings));
  ASSERT_EQ(r.value->services.size(), 2u);
  const ServiceSpec& s = r.value->services[0];
  EXPECT_EQ(s.id, "1");
  EXPECT_EQ(s.name, "backend");
  EXPECT_EQ(s.labels, (std::vector<std::pair<std::string, std::string>>{{"tier", "web"}}));
  EXPECT_EQ(s.hosts, (Lines{"api.example.com", "*.example.org"}));
  ASSERT_TRUE(s.upstream.has_value());
  EXPECT_EQ(s.upstream->id, "");
  ASSERT_EQ(s.upstream->nodes.size(), 1u);
  EXPECT_EQ(s.upstream->nodes[0].port, 80);
  EXPECT_EQ(s.upstream_id, "");
  ASSERT_EQ(s.plugins.size(), 1u);
  EXPECT_EQ(s.plugins[0].path, "services[0].plugins.limit-count");
  EXPECT_TRUE(s.enable_websocket);
  EXPECT_EQ(s.loc.line, 2);
  EXPECT_EQ(s.loc.col, 5);
  EXPECT_EQ(s.path, "services[0]");

  const ServiceSpec& t = r.value->services[1];
  EXPECT_EQ(t.id, "arr_2");
  EXPECT_EQ(t.upstream_id, "3");
  EXPECT_FALSE(t.upstream.has_value());
  EXPECT_TRUE(t.hosts.empty());
  EXPECT_FALSE(t.enable_websocket);
}

TEST(ServicesTest, InvalidServicesAreSkipped) {
  auto r = Parse(R"(services:
  - id: a
    uri: /not-a-service-field
  - id: b
    hosts: []
  - id: c
    hosts: [a.com, A.COM, "a b"]
  - id: d
    upstream: {nodes: {"10.0.0.1:0": 1}}
  - id: e
    enable_websocket: 1
    upstream_id: [1]
  - id: f
    script: "local _M = {} return _M"
  - "not a map"
#END
)");
  ASSERT_TRUE(r.value.has_value());
  ASSERT_EQ(r.value->services.size(), 1u);
  EXPECT_EQ(r.value->services[0].id, "f");
  EXPECT_EQ(Strings(r.warnings),
            (Lines{"apisix.yaml:14:5: services[5].script: not supported yet, ignored"}));
  const std::string id_msg =
      "invalid id: must be a string of 1-64 characters from [a-zA-Z0-9-_.] or an integer >= 1";
  EXPECT_EQ(Strings(r.errors),
            (Lines{
                "apisix.yaml:3:5: services[0].uri: unknown field",
                "apisix.yaml:5:12: services[1].hosts: must not be empty",
                "apisix.yaml:7:20: services[2].hosts[1]: duplicate item \"a.com\"",
                "apisix.yaml:7:27: services[2].hosts[2]: invalid host \"a b\": must be `*` or "
                "match ^\\*?[0-9a-zA-Z-._\\[\\]:]+$",
                "apisix.yaml:9:24: services[3].upstream.nodes[\"10.0.0.1:0\"]: invalid node "
                "address \"10.0.0.1:0\": expected host, host:port or [ipv6]:port",
                "apisix.yaml:11:23: services[4].enable_websocket: wrong type: expected boolean, "
                "got integer",
                "apisix.yaml:12:18: services[4].upstream_id: " + id_msg,
                "apisix.yaml:15:5: services[6]: wrong type: expected map, got string",
            }));
}

}  // namespace
}  // namespace turnpike::config
