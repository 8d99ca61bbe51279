// Services, plugin configs, global rules and the plugin chain through the real daemon
// (reference §2.5), with APISIX's echo plugin as the observable plugin.

#include <string>

#include "integration/itest.h"

namespace turnpike::itest {
namespace {

class CompositionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backends_ = StartBackends({"A", "B"}); }
  static void TearDownTestSuite() { backends_.clear(); }
  void SetUp() override { ASSERT_EQ(backends_.size(), 2u) << "backends did not start"; }

  void Start(const std::string& yaml, const TurnpikeOptions& options = {}) {
    std::string routes = Fill(yaml, {{"A", Upstream(0)}, {"B", Upstream(1)},
                                     {"PORT_A", std::to_string(backends_[0]->port())}});
    ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, routes, options));
  }
  HttpResponse GetWithHost(const std::string& path, const std::string& host) {
    HttpRequest req;
    req.target = path;
    req.headers.emplace_back("Host", host);
    return Fetch(gw_.port(), req);
  }
  static std::string Upstream(size_t i) { return "{nodes: [" + Node(backends_[i]->port()) + "]}"; }

  static inline std::vector<std::unique_ptr<Backend>> backends_;
  Turnpike gw_{kTurnpikeBin};
};

TEST_F(CompositionTest, RouteTakesUpstreamAndHostsFromItsService) {
  Start(R"(
services:
  - id: s1
    hosts: [svc.example.com]
    upstream: {A}
routes:
  - uri: /hello
    service_id: s1
  - uri: /hello
    service_id: s1
    hosts: [other.example.com]
    upstream: {B}
#END
)");
  EXPECT_EQ(BackendOf(GetWithHost("/hello", "svc.example.com")), "A");
  EXPECT_EQ(BackendOf(GetWithHost("/hello", "other.example.com")), "B");  // route overrides
  EXPECT_EQ(GetWithHost("/hello", "nope.example.com").status, 404);
}

TEST_F(CompositionTest, ServiceUpstreamIdAndMissingService) {
  Start(R"(
upstreams:
  - id: 1
    nodes: {"127.0.0.1:{PORT_A}": 1}
services:
  - id: 7
    upstream_id: 1
routes:
  - uri: /hello
    service_id: 7
  - uri: /echo
    service_id: missing
    upstream: {B}
#END
)");
  EXPECT_EQ(BackendOf(Get(gw_.port(), "/hello")), "A");
  EXPECT_EQ(Get(gw_.port(), "/echo").status, 404);  // APISIX: missing service -> 404
}

TEST_F(CompositionTest, EchoPluginWrapsTheUpstreamBody) {
  Start(R"(
routes:
  - uri: /hello
    upstream: {A}
    plugins:
      echo: {before_body: "<", after_body: ">", headers: {X-Echo: "yes"}}
#END
)");
  HttpResponse r = Get(gw_.port(), "/hello");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "<hello world\n>");
  EXPECT_EQ(r.Header("X-Echo").value_or(""), "yes");
  EXPECT_FALSE(r.HasHeader("Content-Length")) << "the body changed: length must be dropped";
  // keep-alive still works after a modified body
  EXPECT_EQ(Get(gw_.port(), "/hello").body, "<hello world\n>");
}

TEST_F(CompositionTest, EchoBodyReplacesTheResponseAndLocalAnswers) {
  Start(R"(
routes:
  - uri: /bytes/*
    upstream: {A}
    plugins:
      echo: {body: "replaced"}
global_rules:
  - id: g1
    plugins:
      echo: {before_body: "G:"}
#END
)");
  // Global rules run first in every phase (APISIX's common_phase): the global echo prefixes
  // the first piece, then the route's echo replaces the whole body.
  HttpResponse r = Get(gw_.port(), "/bytes/100000");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "replaced");
  // Global rules also run for unmatched requests (the 404 body is filtered).
  HttpResponse nf = Get(gw_.port(), "/nothing");
  EXPECT_EQ(nf.status, 404);
  EXPECT_EQ(nf.body, std::string("G:") + kNotFoundBody);
}

TEST_F(CompositionTest, PluginPrecedenceRouteOverPluginConfigOverService) {
  Start(R"(
services:
  - id: s
    upstream: {A}
    plugins:
      echo: {before_body: "service:"}
plugin_configs:
  - id: pc
    plugins:
      echo: {before_body: "plugin_config:"}
routes:
  - uri: /hello
    service_id: s
  - uri: /echo
    service_id: s
    plugin_config_id: pc
  - uri: /conn
    service_id: s
    plugin_config_id: pc
    plugins:
      echo: {before_body: "route:"}
  - uri: /status/*
    plugin_config_id: missing
    upstream: {A}
#END
)");
  EXPECT_EQ(Get(gw_.port(), "/hello").body, "service:hello world\n");
  EXPECT_EQ(Get(gw_.port(), "/echo").body.rfind("plugin_config:", 0), 0u);
  EXPECT_EQ(Get(gw_.port(), "/conn").body.rfind("route:", 0), 0u);
  EXPECT_EQ(Get(gw_.port(), "/status/200").status, 503);  // missing plugin_config
}

TEST_F(CompositionTest, MetaDisableAndUnknownPlugins) {
  Start(R"(
routes:
  - uri: /hello
    upstream: {A}
    plugins:
      echo: {before_body: "x", _meta: {disable: true}}
  - uri: /echo
    upstream: {A}
    plugins:
      no-such-plugin: {}
#END
)");
  EXPECT_EQ(Get(gw_.port(), "/hello").body, "hello world\n");
  EXPECT_EQ(Get(gw_.port(), "/echo").status, 404);  // the route was skipped
  EXPECT_NE(gw_.Stderr().find("routes[1].plugins.no-such-plugin: unknown plugin [no-such-plugin]"),
            std::string::npos)
      << gw_.Stderr();
}

TEST_F(CompositionTest, CheckReportsPluginErrorsWithLocation) {
  Start(R"(
routes:
  - uri: /hello
    upstream: {A}
#END
)");
  gw_.RewriteRoutes(Fill(R"(
routes:
  - uri: /hello
    upstream: {A}
    plugins:
      echo: {body: 5}
#END
)", {{"A", Upstream(0)}}));
  RunResult check =
      RunProcess(kTurnpikeBin, {"check", "-c", gw_.config_path()}, std::chrono::seconds(20));
  ASSERT_TRUE(check.status.has_value());
  EXPECT_EQ(check.status->code, 1) << check.err;
  EXPECT_NE(check.err.find(":6:7: routes[0].plugins.echo: failed to check the "
                                   "configuration of plugin echo err: property \"body\" "
                                   "validation failed: wrong type: expected string, got number"),
            std::string::npos)
      << check.err;
}

}  // namespace
}  // namespace turnpike::itest
