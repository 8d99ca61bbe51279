// Route selection as a client sees it: which backend answers (X-Backend-Id) for a given
// method, Host and path. See apisix-behaviour.md §2.2-2.3.

#include <string>

#include "integration/itest.h"

namespace turnpike::itest {
namespace {

class RoutingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backends_ = StartBackends({"A", "B", "C"}); }
  static void TearDownTestSuite() { backends_.clear(); }
  void SetUp() override { ASSERT_EQ(backends_.size(), 3u) << "backends did not start"; }

  // Starts the gateway with `yaml`, where {A}, {B} and {C} stand for inline upstreams
  // pointing at the backend of that id.
  void StartRoutes(const std::string& yaml) {
    std::string routes = Fill(yaml, {{"A", Upstream(0)}, {"B", Upstream(1)}, {"C", Upstream(2)}});
    ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, routes));
  }

  // Id of the backend that answered GET `path` with Host `host`; "404" for the gateway's
  // route-not-found response; the status line for anything else.
  std::string Via(const std::string& path, const std::string& host = "",
                  const std::string& method = "GET") {
    HttpRequest req;
    req.method = method;
    req.target = path;
    if (!host.empty()) req.headers.emplace_back("Host", host);
    HttpResponse r = Fetch(gw_.port(), req);
    if (r.status == 200 && r.HasHeader("X-Backend-Id")) return BackendOf(r);
    if (r.status == 404 && r.body == kNotFoundBody) return "404";
    return "unexpected: " + r.DebugString();
  }

  static std::string Upstream(size_t i) { return "{nodes: [" + Node(backends_[i]->port()) + "]}"; }

  static inline std::vector<std::unique_ptr<Backend>> backends_;
  Turnpike gw_{kTurnpikeBin};
};

TEST_F(RoutingTest, ExactPathBeatsPrefixEvenWithLowerPriority) {
  StartRoutes(R"(
routes:
  - uri: /echo/*
    priority: 100
    upstream: {A}
  - uri: /echo/x
    upstream: {B}
#END
)");
  EXPECT_EQ(Via("/echo/x"), "B");
  EXPECT_EQ(Via("/echo/x?q=1"), "B");  // the query string is not part of the path
  EXPECT_EQ(Via("/echo/y"), "A");
  EXPECT_EQ(Via("/echo/x/"), "A");  // exact means exact
}

TEST_F(RoutingTest, LongerPrefixWins) {
  StartRoutes(R"(
routes:
  - uri: /echo/*
    priority: 100
    upstream: {A}
  - uri: /echo/foo/*
    upstream: {B}
  - uri: /echo/foo/bar/*
    priority: -5
    upstream: {C}
#END
)");
  EXPECT_EQ(Via("/echo/foo/x"), "B");
  EXPECT_EQ(Via("/echo/foo/bar/baz"), "C");
  EXPECT_EQ(Via("/echo/bar"), "A");
  EXPECT_EQ(Via("/echo/foo"), "A");  // `/echo/foo/*` needs the slash
}

TEST_F(RoutingTest, PriorityOrdersRoutesOnTheSamePath) {
  StartRoutes(R"(
routes:
  - uri: /echo/p
    priority: 1
    upstream: {A}
  - uri: /echo/p
    priority: 10
    upstream: {B}
  - uri: /echo/q
    upstream: {C}
  - uri: /echo/q
    upstream: {A}
  - uri: /echo/*
    priority: 3
    upstream: {A}
  - uri: /echo/*
    priority: 7
    upstream: {C}
#END
)");
  EXPECT_EQ(Via("/echo/p"), "B");
  EXPECT_EQ(Via("/echo/q"), "C");  // equal priority: file order
  EXPECT_EQ(Via("/echo/r"), "C");
}

TEST_F(RoutingTest, HostBoundRouteBeatsHostlessRoute) {
  StartRoutes(R"(
routes:
  - uri: /echo/*
    priority: 100
    upstream: {A}
  - uri: /echo/*
    hosts: [api.test]
    upstream: {B}
#END
)");
  EXPECT_EQ(Via("/echo/1", "api.test"), "B");
  EXPECT_EQ(Via("/echo/1", "other.test"), "A");
  EXPECT_EQ(Via("/echo/1"), "A");  // Host: 127.0.0.1:<port>
}

TEST_F(RoutingTest, HostBoundRouteFallsBackToHostlessWhenItsPathDoesNotMatch) {
  StartRoutes(R"(
routes:
  - uri: /hello
    upstream: {A}
  - uri: /echo/*
    host: api.test
    upstream: {B}
#END
)");
  EXPECT_EQ(Via("/hello", "api.test"), "A");
  EXPECT_EQ(Via("/echo/1", "api.test"), "B");
  EXPECT_EQ(Via("/echo/1", "else.test"), "404");
}

TEST_F(RoutingTest, WildcardHostMatchesSubdomainsOnly) {
  StartRoutes(R"(
routes:
  - uri: /echo/*
    upstream: {A}
  - uri: /echo/*
    hosts: ["*.foo.com"]
    upstream: {B}
  - uri: /echo/*
    hosts: [api.foo.com]
    upstream: {C}
#END
)");
  EXPECT_EQ(Via("/echo/1", "a.foo.com"), "B");
  EXPECT_EQ(Via("/echo/1", "a.b.foo.com"), "B");
  EXPECT_EQ(Via("/echo/1", "api.foo.com"), "C");  // exact host beats the wildcard
  EXPECT_EQ(Via("/echo/1", "foo.com"), "A");
  EXPECT_EQ(Via("/echo/1", "xfoo.com"), "A");
}

TEST_F(RoutingTest, HostMatchIgnoresCaseAndPort) {
  StartRoutes(R"(
routes:
  - uri: /echo/*
    upstream: {A}
  - uri: /echo/*
    hosts: [api.test, "*.Wild.Test"]
    upstream: {B}
#END
)");
  EXPECT_EQ(Via("/echo/1", "API.Test"), "B");
  EXPECT_EQ(Via("/echo/1", "api.test:8080"), "B");
  EXPECT_EQ(Via("/echo/1", "Api.TEST:1"), "B");
  EXPECT_EQ(Via("/echo/1", "x.wild.test"), "B");
  EXPECT_EQ(Via("/echo/1", "X.WILD.TEST:99"), "B");
}

TEST_F(RoutingTest, MethodsFilterGives404WhenNoRouteAllowsTheMethod) {
  StartRoutes(R"(
routes:
  - uri: /echo/m
    methods: [POST, PUT]
    upstream: {A}
#END
)");
  EXPECT_EQ(Via("/echo/m", "", "POST"), "A");
  EXPECT_EQ(Via("/echo/m", "", "PUT"), "A");
  HttpResponse r = Get(gw_.port(), "/echo/m");
  EXPECT_EQ(r.status, 404) << r.DebugString();
  EXPECT_EQ(r.body, kNotFoundBody);
}

TEST_F(RoutingTest, MethodsFilterFallsThroughToNextRoute) {
  StartRoutes(R"(
routes:
  - uri: /echo/m
    methods: [POST]
    priority: 10
    upstream: {A}
  - uri: /echo/m
    upstream: {B}
#END
)");
  EXPECT_EQ(Via("/echo/m", "", "POST"), "A");
  EXPECT_EQ(Via("/echo/m", "", "GET"), "B");
  EXPECT_EQ(Via("/echo/m", "", "DELETE"), "B");
}

TEST_F(RoutingTest, UnmatchedRequestGetsExact404Body) {
  StartRoutes(R"(
routes:
  - uri: /hello
    upstream: {A}
#END
)");
  for (const char* path : {"/", "/nothing", "/hello/", "/hellox"}) {
    HttpResponse r = Get(gw_.port(), path);
    EXPECT_EQ(r.status, 404) << path << "\n" << r.DebugString();
    EXPECT_EQ(r.body, kNotFoundBody) << path;
    EXPECT_FALSE(r.HasHeader("X-Backend-Id")) << path;
  }
  EXPECT_EQ(Via("/hello"), "A");
}

TEST_F(RoutingTest, NumericUpstreamIdMatchesStringId) {
  std::string routes = Fill(R"(
routes:
  - uri: /hello
    upstream_id: 1
  - uri: /echo/*
    upstream_id: "2"
upstreams:
  - id: "1"
    nodes: [{A}]
  - id: 2
    nodes: [{B}]
#END
)",
                            {{"A", Node(backends_[0]->port())}, {"B", Node(backends_[1]->port())}});
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, routes));
  EXPECT_EQ(Via("/hello"), "A");
  EXPECT_EQ(Via("/echo/2"), "B");
}

TEST_F(RoutingTest, DisabledRouteIsIgnored) {
  StartRoutes(R"(
routes:
  - uri: /echo/x
    status: 0
    upstream: {B}
  - uri: /echo/*
    upstream: {A}
#END
)");
  EXPECT_EQ(Via("/echo/x"), "A");
}

}  // namespace
}  // namespace turnpike::itest
