// AnswerControlRequest: each endpoint of APISIX's control API (apisix/control/v1.lua and the
// discovery routes of control/router.lua), its error bodies and statuses
// (t/control/*.t), over a real view and fake hooks.
#include "admin/control_api.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "config/loader.h"

namespace turnpike::admin {
namespace {

using Json = nlohmann::json;
using base::Method;

constexpr char kRoutes[] = R"(routes:
  - id: 1
    uris: [/hello]
    upstream:
      nodes: {"127.0.0.1:1980": 1, "127.0.0.1:1988": 1}
      checks: {active: {http_path: /status}}
  - id: 2
    uri: /two
    service_id: 1
services:
  - id: 1
    upstream:
      nodes: {"127.0.0.1:1980": 1}
      checks: {active: {type: tcp}, passive: {type: http}}
upstreams:
  - id: 1
    nodes: {"127.0.0.1:8001": 1}
    checks: {active: {type: tcp}}
  - id: 2
    nodes: {"127.0.0.1:8002": 1}
#END
)";

class ControlApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = config::ParseRoutesConfig(kRoutes, "apisix.yaml", {.keep_source = true});
    ASSERT_TRUE(r.value.has_value());
    view_ = ControlView::Build(*r.value, {}, 42);
    hooks_.view = [this] { return view_.get(); };
    hooks_.discovery_dump = [this](std::string_view name) -> std::optional<Json> {
      auto it = dumps_.find(std::string(name));
      if (it == dumps_.end()) return std::nullopt;
      return it->second;
    };
    hooks_.show_dump_file = [](std::string_view name) -> std::optional<HttpAnswer> {
      if (name != "consul") return std::nullopt;
      return HttpAnswer{200, "text/plain", "{\"services\":{}}"};
    };
    hooks_.health_nodes = [this](std::string_view key) {
      auto it = health_.find(std::string(key));
      return it == health_.end() ? Json() : it->second;
    };
    hooks_.reload_plugins = [this] {
      ++reloads_;
      return reload_ok_;
    };
  }

  HttpAnswer Get(std::string_view path, Method method = Method::kGet) {
    return AnswerControlRequest(method, path, hooks_);
  }
  // The body of a JSON answer, checking APISIX's framing (content type, trailing newline).
  static Json Body(const HttpAnswer& a) {
    EXPECT_EQ(a.content_type, "application/json");
    EXPECT_FALSE(a.body.empty());
    EXPECT_EQ(a.body.back(), '\n');
    return Json::parse(a.body);
  }

  std::unique_ptr<ControlView> view_;
  ControlHooks hooks_;
  std::map<std::string, Json> dumps_;
  std::map<std::string, Json> health_;
  int reloads_ = 0;
  bool reload_ok_ = true;
};

TEST_F(ControlApiTest, Lists) {
  HttpAnswer routes = Get("/v1/routes");
  EXPECT_EQ(routes.status, 200);
  Json list = Body(routes);
  ASSERT_TRUE(list.is_array());
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0]["key"], "/routes/1");
  EXPECT_EQ(list[0]["modifiedIndex"], 42);
  EXPECT_EQ(list[1]["value"]["service_id"], 1) << "as written";
  EXPECT_EQ(Body(Get("/v1/services")).size(), 1u);
  Json upstreams = Body(Get("/v1/upstreams"));
  ASSERT_EQ(upstreams.size(), 2u);
  EXPECT_EQ(upstreams[1]["value"]["nodes"],
            Json::parse(R"([{"host":"127.0.0.1","port":8002,"weight":1}])"));
  EXPECT_EQ(Get("/v1/routes", Method::kHead).status, 200);
  EXPECT_EQ(Get("/v1/routes", Method::kPost).status, 404) << "GET only, as v1.lua";
  EXPECT_EQ(Get("/v1/routes/1").status, 404) << "the singular form takes an id";
}

TEST_F(ControlApiTest, OneItem) {
  Json route = Body(Get("/v1/route/1"));
  EXPECT_EQ(route["value"]["id"], "1");
  EXPECT_EQ(route["value"]["upstream"]["hash_on"], "vars");
  EXPECT_EQ(Body(Get("/v1/service/1"))["key"], "/services/1");
  EXPECT_EQ(Body(Get("/v1/upstream/2"))["value"]["id"], "2");
  // v1.lua reads the fourth segment and ignores the rest.
  EXPECT_EQ(Body(Get("/v1/upstream/2/extra"))["value"]["id"], "2");
  // t/control/routes.t, services.t, upstreams.t: 404 with the id.
  HttpAnswer missing = Get("/v1/route/9");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, "{\"error_msg\":\"route[9] not found\"}\n");
  EXPECT_EQ(Get("/v1/service/9").body, "{\"error_msg\":\"service[9] not found\"}\n");
  EXPECT_EQ(Get("/v1/upstream/9").body, "{\"error_msg\":\"upstream[9] not found\"}\n");
  EXPECT_EQ(Get("/v1/route/").body, "{\"error_msg\":\"route[] not found\"}\n");
}

TEST_F(ControlApiTest, HealthCheckers) {
  // No checker has started: the items are listed without nodes.
  Json all = Body(Get("/v1/healthcheck"));
  EXPECT_EQ(all, Json::parse(R"([{"name":"/routes/1","type":"http"},
                                 {"name":"/services/1","type":"tcp"},
                                 {"name":"/upstreams/1","type":"tcp"}])"));
  // With the checker's report (t/control/healthcheck.t's node shape).
  Json nodes = Json::parse(R"([{"ip":"127.0.0.1","port":1980,"hostname":"127.0.0.1",
      "status":"healthy","counter":{"success":0,"http_failure":0,"tcp_failure":0,
      "timeout_failure":0}}])");
  health_["/routes/1"] = nodes;
  Json one = Body(Get("/v1/healthcheck/routes/1"));
  EXPECT_EQ(one["name"], "/routes/1");
  EXPECT_EQ(one["type"], "http");
  EXPECT_EQ(one["nodes"], nodes);
  EXPECT_EQ(Body(Get("/v1/healthcheck"))[0]["nodes"], nodes);
  EXPECT_FALSE(Body(Get("/v1/healthcheck/upstreams/1")).contains("nodes"));

  // t/control/healthcheck.t TEST 5, 6, and v1.lua's other answers.
  HttpAnswer unknown = Get("/v1/healthcheck/routes/9");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.body, "{\"error_msg\":\"routes[9] not found\"}\n");
  HttpAnswer bad_type = Get("/v1/healthcheck/route/1");
  EXPECT_EQ(bad_type.status, 400);
  EXPECT_EQ(bad_type.body, "{\"error_msg\":\"invalid src type route\"}\n");
  HttpAnswer unchecked = Get("/v1/healthcheck/upstreams/2");
  EXPECT_EQ(unchecked.status, 404);
  EXPECT_EQ(unchecked.body, "{\"error_msg\":\"no checker for upstreams[2]\"}\n");
  EXPECT_EQ(Get("/v1/healthcheck/routes/2").body, "{\"error_msg\":\"no checker for routes[2]\"}\n")
      << "a route whose service has checks has none itself";
  HttpAnswer no_id = Get("/v1/healthcheck/upstreams");
  EXPECT_EQ(no_id.status, 404);
  EXPECT_EQ(no_id.body, "{\"error_msg\":\"missing src id for src type upstreams\"}\n");
}

TEST_F(ControlApiTest, NoCheckersIsAnEmptyObject) {
  // t/control/healthcheck.t TEST 4: `{}`.
  auto r = config::ParseRoutesConfig("routes:\n  - {uri: /a, upstream_id: 1}\n#END\n", "f",
                                     {.keep_source = true});
  ASSERT_TRUE(r.value.has_value());
  view_ = ControlView::Build(*r.value, {}, 1);
  HttpAnswer a = Get("/v1/healthcheck");
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body, "{}\n");
  EXPECT_EQ(Get("/v1/upstreams").body, "{}\n");
}

TEST_F(ControlApiTest, BeforeTheFirstLoad) {
  view_.reset();
  EXPECT_EQ(Get("/v1/routes").body, "{}\n");
  EXPECT_EQ(Get("/v1/healthcheck").body, "{}\n");
  EXPECT_EQ(Get("/v1/route/1").status, 404);
  EXPECT_EQ(Get("/v1/healthcheck/routes/1").status, 404);
}

TEST_F(ControlApiTest, Discovery) {
  dumps_["dns"] = Json{{"services", Json::object()}};
  dumps_["nacos"] = Json();  // configured, nothing to show
  HttpAnswer dns = Get("/v1/discovery/dns/dump");
  EXPECT_EQ(dns.status, 200);
  EXPECT_EQ(Body(dns), dumps_["dns"]);
  EXPECT_EQ(Get("/v1/discovery/nacos/dump").status, 404);
  EXPECT_EQ(Get("/v1/discovery/eureka/dump").status, 404) << "not configured";
  EXPECT_EQ(Get("/v1/discovery/dns/dump/x").status, 404);
  HttpAnswer file = Get("/v1/discovery/consul/show_dump_file");
  EXPECT_EQ(file.status, 200);
  EXPECT_EQ(file.content_type, "text/plain") << "the file's text as it is";
  EXPECT_EQ(file.body, "{\"services\":{}}");
  EXPECT_EQ(Get("/v1/discovery/dns/show_dump_file").status, 404);
}

TEST_F(ControlApiTest, PluginsReload) {
  HttpAnswer a = Get("/v1/plugins/reload", Method::kPut);
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body, "done");
  EXPECT_EQ(reloads_, 1);
  EXPECT_EQ(Get("/v1/plugins/reload").status, 404) << "PUT only";
  EXPECT_EQ(reloads_, 1);
  reload_ok_ = false;
  EXPECT_EQ(Get("/v1/plugins/reload", Method::kPut).status, 503);
  hooks_.reload_plugins = nullptr;
  EXPECT_EQ(Get("/v1/plugins/reload", Method::kPut).status, 503);
}

TEST_F(ControlApiTest, UnknownPaths) {
  for (std::string_view path : {"/", "/v1", "/v1/", "/v2/routes", "/v1/schema", "/v1/gc",
                                "/v1/plugin_metadatas", "v1/routes", "/v1/discovery"}) {
    HttpAnswer a = Get(path);
    EXPECT_EQ(a.status, 404) << path;
    EXPECT_EQ(a.body, "{\"error_msg\":\"404 Not Found\"}\n") << path;
  }
  EXPECT_EQ(Get("/v1/routes", Method::kDelete).status, 404);
}

TEST_F(ControlApiTest, EmptyHooksShowNothing) {
  ControlHooks none;
  EXPECT_EQ(AnswerControlRequest(Method::kGet, "/v1/routes", none).body, "{}\n");
  EXPECT_EQ(AnswerControlRequest(Method::kGet, "/v1/discovery/dns/dump", none).status, 404);
  EXPECT_EQ(AnswerControlRequest(Method::kPut, "/v1/plugins/reload", none).status, 503);
}

}  // namespace
}  // namespace turnpike::admin
