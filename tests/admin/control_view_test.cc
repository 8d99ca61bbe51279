// ControlView: apisix.yaml items as APISIX's control API shows them (apisix/control/v1.lua
// over config_yaml.lua's items and the route, service and upstream filters), checked field
// by field, from files parsed the way the daemon parses them (keep_source).
#include "admin/control_view.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "config/loader.h"

namespace turnpike::admin {
namespace {

using Json = nlohmann::json;
using Kind = ControlView::Kind;

constexpr int64_t kMtime = 1700000000;

std::unique_ptr<ControlView> ViewOf(const std::string& yaml,
                                    const std::vector<std::string>& skipped = {}) {
  config::LoadResult<config::RoutesConfig> r =
      config::ParseRoutesConfig(yaml + "#END\n", "apisix.yaml", {.keep_source = true});
  EXPECT_TRUE(r.value.has_value());
  EXPECT_TRUE(r.errors.empty()) << r.errors.front().ToString();
  return ControlView::Build(*r.value, skipped, kMtime);
}

Json ItemOf(ControlView& view, Kind kind, std::string_view id) {
  std::optional<std::string> text = view.Item(kind, id);
  EXPECT_TRUE(text.has_value()) << id;
  return text ? Json::parse(*text) : Json();
}

TEST(ControlViewTest, RouteWithInlineUpstream) {
  auto view = ViewOf(R"(routes:
  - id: 1
    uris: [/hello]
    hosts: [Foo.Example.COM]
    desc: the hello route
    create_time: 1690000000
    upstream:
      nodes:
        "127.0.0.1:1980": 1
      type: roundrobin
)");
  Json item = ItemOf(*view, Kind::kRoutes, "1");
  // config_yaml.lua's item: key "/routes/<id>", modifiedIndex = the file's mtime; the route
  // filter's orig_modifiedIndex and has_domain.
  EXPECT_EQ(item["key"], "/routes/1");
  EXPECT_EQ(item["modifiedIndex"], kMtime);
  EXPECT_EQ(item["orig_modifiedIndex"], kMtime);
  EXPECT_EQ(item["has_domain"], false);
  const Json& v = item["value"];
  EXPECT_EQ(v["id"], "1") << "ids are strings";
  EXPECT_EQ(v["uris"], Json::parse(R"(["/hello"])"));
  EXPECT_EQ(v["hosts"], Json::parse(R"(["foo.example.com"])")) << "hosts are lowercased";
  EXPECT_EQ(v["desc"], "the hello route") << "fields Turnpike ignores are shown as written";
  EXPECT_EQ(v["create_time"], 1690000000);
  EXPECT_EQ(v["priority"], 0);  // the route schema's defaults
  EXPECT_EQ(v["status"], 1);
  // t/control/routes.t: {"hash_on":"vars","nodes":[{"host":"127.0.0.1","port":1980,
  // "weight":1}],"pass_host":"pass",...,"scheme":"http","type":"roundrobin"}
  const Json& up = v["upstream"];
  EXPECT_EQ(up["nodes"], Json::parse(R"([{"host":"127.0.0.1","port":1980,"weight":1}])"));
  EXPECT_EQ(up["hash_on"], "vars");
  EXPECT_EQ(up["pass_host"], "pass");
  EXPECT_EQ(up["scheme"], "http");
  EXPECT_EQ(up["type"], "roundrobin");
  // upstream.lua's filter_upstream: the owner's key, version and id.
  EXPECT_EQ(up["resource_key"], "/routes/1");
  EXPECT_EQ(up["resource_version"], kMtime);
  EXPECT_EQ(up["resource_id"], "1");
  EXPECT_FALSE(up.contains("dns_nodes"));
  EXPECT_FALSE(up.contains("keepalive_pool")) << "object defaults only where present";
  EXPECT_FALSE(up.contains("checks"));
}

TEST(ControlViewTest, StandaloneUpstreams) {
  auto view = ViewOf(R"(upstreams:
  - id: 1
    nodes:
      "127.0.0.1:8001": 1
      "[::1]:8002": 2
      "example.com": 3
    keepalive_pool: {size: 8}
  - id: u2
    type: chash
    hash_on: header
    key: X-User
    pass_host: node
    nodes:
      - {host: 127.0.0.2, port: 8003, weight: 1}
      - {host: 127.0.0.3, port: 8004, weight: 0, priority: -1}
)");
  Json one = ItemOf(*view, Kind::kUpstreams, "1");
  EXPECT_EQ(one["key"], "/upstreams/1");
  EXPECT_EQ(one["modifiedIndex"], kMtime);
  EXPECT_FALSE(one.contains("orig_modifiedIndex")) << "a route filter's field";
  EXPECT_EQ(one["has_domain"], true) << "example.com is not an IP";
  const Json& v = one["value"];
  EXPECT_EQ(v["id"], "1");
  // Map form converted as core.utils.parse_addr splits it (a node without port has none).
  Json nodes = Json::parse(R"([{"host":"127.0.0.1","port":8001,"weight":1},
                              {"host":"[::1]","port":8002,"weight":2},
                              {"host":"example.com","weight":3}])");
  EXPECT_EQ(v["nodes"], nodes);
  EXPECT_EQ(v["dns_nodes"], nodes) << "with host names, the filter keeps dns_nodes";
  EXPECT_EQ(v["keepalive_pool"], Json::parse(R"({"size":8,"idle_timeout":60,"requests":1000})"));
  EXPECT_EQ(v["resource_key"], "/upstreams/1");
  EXPECT_EQ(v["resource_id"], "1");

  Json two = ItemOf(*view, Kind::kUpstreams, "u2");
  EXPECT_EQ(two["has_domain"], false);
  const Json& w = two["value"];
  EXPECT_EQ(w["type"], "chash");
  EXPECT_EQ(w["hash_on"], "header");
  EXPECT_EQ(w["key"], "X-User");
  EXPECT_EQ(w["pass_host"], "node");
  EXPECT_EQ(w["scheme"], "http");
  // The list form's item schema fills priority.
  EXPECT_EQ(w["nodes"], Json::parse(R"([{"host":"127.0.0.2","port":8003,"weight":1,"priority":0},
                       {"host":"127.0.0.3","port":8004,"weight":0,"priority":-1}])"));
}

TEST(ControlViewTest, ServiceWithPlugins) {
  // t/control/services.t: plugins shown with `_meta`, the inline upstream shaped.
  auto view = ViewOf(R"(services:
  - id: 5
    hosts: [API.example.com]
    plugins:
      limit-count: {count: 2, time_window: 60, rejected_code: 503, key: remote_addr}
    upstream:
      nodes:
        "127.0.0.1:1980": 1
      type: roundrobin
)");
  Json item = ItemOf(*view, Kind::kServices, "5");
  EXPECT_EQ(item["key"], "/services/5");
  EXPECT_EQ(item["has_domain"], false);
  const Json& v = item["value"];
  EXPECT_EQ(v["id"], "5");
  EXPECT_EQ(v["hosts"], Json::parse(R"(["api.example.com"])"));
  EXPECT_EQ(v["plugins"]["limit-count"],
            Json::parse(R"({"count":2,"time_window":60,"rejected_code":503,
                            "key":"remote_addr","_meta":{}})"));
  EXPECT_EQ(v["upstream"]["resource_key"], "/services/5");
  EXPECT_EQ(v["upstream"]["nodes"][0]["port"], 1980);
  EXPECT_FALSE(v.contains("priority")) << "a route schema default";
}

TEST(ControlViewTest, HealthCheckDefaults) {
  auto view = ViewOf(R"(upstreams:
  - id: 1
    nodes: {"127.0.0.1:1980": 1}
    checks:
      active:
        http_path: /status
        healthy: {interval: 2}
      passive:
        type: tcp
        unhealthy: {tcp_failures: 3}
)");
  Json checks = ItemOf(*view, Kind::kUpstreams, "1")["value"]["checks"];
  const Json& active = checks["active"];
  EXPECT_EQ(active["type"], "http");
  EXPECT_EQ(active["timeout"], 1);
  EXPECT_EQ(active["concurrency"], 10);
  EXPECT_EQ(active["http_method"], "GET");
  EXPECT_EQ(active["http_path"], "/status");
  EXPECT_EQ(active["http_req_body"], "");
  EXPECT_EQ(active["https_verify_certificate"], true);
  EXPECT_EQ(active["healthy"], Json::parse(R"({"interval":2,"http_statuses":[200,302],
                                              "successes":2})"));
  EXPECT_FALSE(active.contains("unhealthy")) << "absent objects stay absent";
  const Json& passive = checks["passive"];
  EXPECT_EQ(passive["type"], "tcp");
  EXPECT_EQ(passive["unhealthy"], Json::parse(R"({"tcp_failures":3,"http_statuses":[429,500,503],
                                                 "timeouts":7,"http_failures":5})"));
  EXPECT_FALSE(passive.contains("healthy"));

  std::vector<ControlView::Checked> checked = view->CheckedItems(Kind::kUpstreams);
  ASSERT_EQ(checked.size(), 1u);
  EXPECT_EQ(checked[0].key, "/upstreams/1");
  EXPECT_EQ(checked[0].type, "http") << "active's type first";
}

TEST(ControlViewTest, CheckedItemsFollowV1Lua) {
  auto view = ViewOf(R"(routes:
  - id: r1
    uri: /a
    upstream: {nodes: {"127.0.0.1:1": 1}, checks: {active: {type: tcp}, passive: {type: http}}}
  - id: r2
    uri: /b
    upstream_id: u
services:
  - id: s1
    upstream: {nodes: {"127.0.0.1:1": 1}, checks: {active: {type: tcp}}}
upstreams:
  - id: u
    nodes: {"127.0.0.1:1": 1}
    checks: {active: {}}
  - id: plain
    nodes: {"127.0.0.1:1": 1}
    desc: mentions "checks" in text only
)");
  std::vector<ControlView::Checked> routes = view->CheckedItems(Kind::kRoutes);
  ASSERT_EQ(routes.size(), 1u) << "a route using a checked upstream_id is not itself checked";
  EXPECT_EQ(routes[0].key, "/routes/r1");
  EXPECT_EQ(routes[0].type, "tcp") << "active's type first";
  std::vector<ControlView::Checked> services = view->CheckedItems(Kind::kServices);
  ASSERT_EQ(services.size(), 1u);
  EXPECT_EQ(services[0].type, "tcp");
  std::vector<ControlView::Checked> upstreams = view->CheckedItems(Kind::kUpstreams);
  ASSERT_EQ(upstreams.size(), 1u);
  EXPECT_EQ(upstreams[0].id, "u");
  EXPECT_EQ(upstreams[0].type, "http");
  EXPECT_TRUE(view->Has(Kind::kUpstreams, "plain"));
  EXPECT_FALSE(view->Checker(Kind::kUpstreams, "plain").has_value());
  EXPECT_FALSE(view->Checker(Kind::kRoutes, "r2").has_value());
  EXPECT_FALSE(view->Has(Kind::kRoutes, "nope"));
}

TEST(ControlViewTest, ListsSkippedAndDisabledItems) {
  auto view = ViewOf(R"(routes:
  - id: a
    uri: /a
    upstream_id: 1
  - uri: /no-id
    status: 0
    upstream_id: 1
  - id: bad
    uri: /bad
    upstream_id: 1
upstreams:
  - id: 1
    nodes: {"127.0.0.1:80": 1}
)",
                     {"routes/bad"});
  EXPECT_EQ(view->size(Kind::kRoutes), 2u);
  EXPECT_FALSE(view->Item(Kind::kRoutes, "bad").has_value()) << "skipped by the build";
  Json disabled = ItemOf(*view, Kind::kRoutes, "arr_2");
  EXPECT_EQ(disabled["key"], "/routes/arr_2") << "config_yaml.lua names id-less items arr_<n>";
  EXPECT_EQ(disabled["value"]["id"], "arr_2");
  EXPECT_EQ(disabled["value"]["status"], 0) << "disabled routes are listed, as in APISIX";
  Json list = Json::parse(view->List(Kind::kRoutes));
  ASSERT_TRUE(list.is_array());
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0]["value"]["id"], "a") << "file order";
  EXPECT_EQ(list[1]["value"]["id"], "arr_2");
  EXPECT_EQ(&view->List(Kind::kRoutes), &view->List(Kind::kRoutes)) << "rendered once";
  EXPECT_EQ(view->List(Kind::kServices), "{}") << "an empty Lua table encodes as an object";
}

TEST(ControlViewTest, JsonRoutesFileAndOddSources) {
  config::LoadResult<config::RoutesConfig> r = config::ParseRoutesConfigJson(
      R"({"upstreams": [{"id": 7, "nodes": [{"host": "10.0.0.1", "port": 80, "weight": 1}]}]})",
      "apisix.json", {.keep_source = true});
  ASSERT_TRUE(r.value.has_value());
  auto view = ControlView::Build(*r.value, {}, 5);
  Json item = Json::parse(view->Item(Kind::kUpstreams, "7").value());
  EXPECT_EQ(item["value"]["id"], "7");
  EXPECT_EQ(item["modifiedIndex"], 5);

  // Not an object (or not JSON): shown as an item with its id only.
  Json empty = Json::parse(RenderControlItem(Kind::kRoutes, "x", "not json", 1));
  EXPECT_EQ(empty["value"]["id"], "x");
  EXPECT_EQ(empty["value"]["priority"], 0);
  // Invalid UTF-8 in a value does not break the answer.
  Json bytes = Json::parse(RenderControlItem(Kind::kRoutes, "y", "{\"desc\":\"\xff\"}", 1));
  EXPECT_EQ(bytes["value"]["desc"], "\xEF\xBF\xBD") << "U+FFFD";
  Json mixed = Json::parse(RenderControlItem(
      Kind::kRoutes, "z", "{\"a\":\"h\xC3\xA9\xE2\x98\x83\xC0\xAF\",\"b\":1}", 1));
  EXPECT_EQ(mixed["value"]["a"], "h\xC3\xA9\xE2\x98\x83\xEF\xBF\xBD\xEF\xBF\xBD")
      << "well-formed sequences kept, an overlong one replaced byte by byte";
  EXPECT_EQ(mixed["value"]["b"], 1);

  // Without keep_source there is nothing to show but the ids.
  config::LoadResult<config::RoutesConfig> plain =
      config::ParseRoutesConfig("routes:\n  - {id: 1, uri: /a, upstream_id: 1}\n#END\n", "f");
  ASSERT_TRUE(plain.value.has_value());
  EXPECT_TRUE(plain.value->routes[0].source.empty());
}

}  // namespace
}  // namespace turnpike::admin
