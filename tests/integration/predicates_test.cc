// Router modes, path parameters and per-route predicates (vars, remote_addrs with the real
// client address) through the real daemon (reference §2.2-2.4, §3.2, §7).

#include <string>

#include "integration/itest.h"

namespace turnpike::itest {
namespace {

class PredicatesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backends_ = StartBackends({"A", "B"}); }
  static void TearDownTestSuite() { backends_.clear(); }
  void SetUp() override { ASSERT_EQ(backends_.size(), 2u) << "backends did not start"; }

  void Start(const std::string& yaml, const TurnpikeOptions& options = {}) {
    std::string routes = Fill(yaml, {{"A", Upstream(0)}, {"B", Upstream(1)}});
    ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, routes, options));
  }
  std::string Via(const std::string& path,
                  std::initializer_list<std::pair<std::string, std::string>> headers = {}) {
    HttpRequest req;
    req.target = path;
    for (const auto& h : headers) req.headers.push_back(h);
    HttpResponse r = Fetch(gw_.port(), req);
    if (r.status == 200 && r.HasHeader("X-Backend-Id")) return BackendOf(r);
    if (r.status == 404) return "404";
    return "unexpected: " + r.DebugString();
  }
  static std::string Upstream(size_t i) { return "{nodes: [" + Node(backends_[i]->port()) + "]}"; }

  static inline std::vector<std::unique_ptr<Backend>> backends_;
  Turnpike gw_{kTurnpikeBin};
};

TEST_F(PredicatesTest, VarsOnHeadersCookiesAndArgs) {
  Start(R"(
routes:
  - uri: /echo
    vars: [["http_x_team", "==", "blue"], ["arg_v", ">", 2]]
    upstream: {A}
  - uri: /echo
    vars: [["OR", ["cookie_beta", "==", "1"], ["http_user_agent", "~~", "^probe/"]]]
    upstream: {B}
#END
)");
  EXPECT_EQ(Via("/echo?v=3", {{"X-Team", "blue"}}), "A");
  EXPECT_EQ(Via("/echo?v=1", {{"X-Team", "blue"}}), "404");  // numeric compare fails
  EXPECT_EQ(Via("/echo?v=3", {{"X-Team", "red"}}), "404");
  EXPECT_EQ(Via("/echo", {{"Cookie", "a=b; beta=1"}}), "B");
  EXPECT_EQ(Via("/echo", {{"User-Agent", "probe/1.0"}}), "B");
  EXPECT_EQ(Via("/echo", {{"User-Agent", "curl/8"}}), "404");
}

TEST_F(PredicatesTest, InvalidVarsSkipTheRouteWithItsLocation) {
  Start(R"(
routes:
  - uri: /echo
    vars: [["http_x", "no-such-op", "1"]]
    upstream: {A}
  - uri: /hello
    upstream: {B}
#END
)");
  EXPECT_EQ(Via("/echo"), "404");
  EXPECT_EQ(Via("/hello"), "B");
  EXPECT_NE(gw_.Stderr().find("routes[0].vars: failed to validate the 'vars' expression"),
            std::string::npos)
      << gw_.Stderr();
}

TEST_F(PredicatesTest, PathParametersInTheParameterRouter) {
  TurnpikeOptions options;
  options.apisix_extra = "  router:\n    http: radixtree_uri_with_parameter\n";
  Start(R"(
routes:
  - uri: /echo/user/:id
    vars: [["uri_param_id", "~~", "^[0-9]+$"]]
    priority: 1           # same bucket as /echo/user/:name, which is longer: checked first
    upstream: {A}
  - uri: /echo/user/:name
    upstream: {B}
#END
)",
        options);
  EXPECT_EQ(Via("/echo/user/42"), "A");
  EXPECT_EQ(Via("/echo/user/bob"), "B");
  EXPECT_EQ(Via("/echo/user/"), "404");  // a parameter is one non-empty segment
}

TEST_F(PredicatesTest, UriRouterDoesNotPreferHostBoundRoutes) {
  std::string yaml = R"(
routes:
  - uri: /echo/x
    upstream: {A}
    priority: 10
  - uri: /echo/*
    hosts: [h.example.com]
    upstream: {B}
#END
)";
  ASSERT_NO_FATAL_FAILURE(Start(yaml));
  EXPECT_EQ(Via("/echo/x", {{"Host", "h.example.com"}}), "B");  // host-bound first
  gw_.Stop();
  TurnpikeOptions options;
  options.apisix_extra = "  router:\n    http: radixtree_uri\n";
  ASSERT_NO_FATAL_FAILURE(Start(yaml, options));
  EXPECT_EQ(Via("/echo/x", {{"Host", "h.example.com"}}), "A");  // exact path first
}

TEST_F(PredicatesTest, RemoteAddrsUseTheRealClientAddress) {
  TurnpikeOptions options;
  options.http_extra = "    real_ip_header: X-Forwarded-For\n    real_ip_from: [127.0.0.1]\n";
  Start(R"(
routes:
  - uri: /echo
    remote_addrs: [10.1.0.0/16, "2001:db8::/32"]
    upstream: {A}
  - uri: /echo
    upstream: {B}
#END
)",
        options);
  EXPECT_EQ(Via("/echo", {{"X-Forwarded-For", "8.8.8.8, 10.1.2.3"}}), "A");
  EXPECT_EQ(Via("/echo", {{"X-Forwarded-For", "2001:db8::7"}}), "A");
  EXPECT_EQ(Via("/echo", {{"X-Forwarded-For", "10.2.0.1"}}), "B");
  EXPECT_EQ(Via("/echo"), "B");  // 127.0.0.1 itself
  // The upstream sees the real client address.
  HttpRequest req;
  req.target = "/echo";
  req.headers.emplace_back("X-Forwarded-For", "10.1.9.9");
  EchoedRequest e = Echo(Fetch(gw_.port(), req));
  EXPECT_EQ(e.Header("X-Real-IP").value_or(""), "10.1.9.9");
}

TEST_F(PredicatesTest, RealIpRecursiveSkipsTrustedProxies) {
  TurnpikeOptions options;
  options.http_extra =
      "    real_ip_header: X-Forwarded-For\n    real_ip_from: [127.0.0.1, 10.9.0.0/16]\n"
      "    real_ip_recursive: \"on\"\n";
  Start(R"(
routes:
  - uri: /echo
    upstream: {A}
#END
)",
        options);
  HttpRequest req;
  req.target = "/echo";
  req.headers.emplace_back("X-Forwarded-For", "6.6.6.6, 10.1.2.3, 10.9.0.1, 10.9.0.2");
  EchoedRequest e = Echo(Fetch(gw_.port(), req));
  EXPECT_EQ(e.Header("X-Real-IP").value_or(""), "10.1.2.3");
}

TEST_F(PredicatesTest, TrustedAddressesKeepForwardedHeaders) {
  TurnpikeOptions options;
  options.apisix_extra = "  trusted_addresses: [127.0.0.1]\n";
  Start(R"(
routes:
  - uri: /echo
    upstream: {A}
#END
)",
        options);
  HttpRequest req;
  req.target = "/echo";
  req.headers.emplace_back("X-Forwarded-Proto", "https");
  req.headers.emplace_back("X-Forwarded-Host", "public.example.com");
  EchoedRequest e = Echo(Fetch(gw_.port(), req));
  EXPECT_EQ(e.Header("X-Forwarded-Proto").value_or(""), "https");
  EXPECT_EQ(e.Header("X-Forwarded-Host").value_or(""), "public.example.com");
}

TEST_F(PredicatesTest, DeleteUriTailSlash) {
  TurnpikeOptions options;
  options.apisix_extra = "  delete_uri_tail_slash: true\n";
  Start(R"(
routes:
  - uri: /echo
    upstream: {A}
#END
)",
        options);
  EXPECT_EQ(Via("/echo/"), "A");  // matched as /echo (the upstream still gets /echo/)
  EXPECT_EQ(Via("/echo"), "A");
}

}  // namespace
}  // namespace turnpike::itest
