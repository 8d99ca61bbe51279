// Upstream resolution, timeouts and retries as the client sees them (apisix-behaviour.md
// §3.3, §3.6): status codes, JSON error bodies, X-APISIX-Upstream-Status.

#include <chrono>
#include <string>

#include "integration/itest.h"

namespace turnpike::itest {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

class UpstreamErrorsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backend_ = StartBackend(kBackendBin, "U"); }
  static void TearDownTestSuite() { backend_.reset(); }
  void SetUp() override {
    ASSERT_NE(backend_, nullptr);
    ASSERT_NE(dead1_.port(), 0);
    ASSERT_NE(dead2_.port(), 0);
  }

  // {GOOD} = the live backend node, {DEAD1}/{DEAD2} = nodes that refuse connections.
  void StartRoutes(const std::string& yaml, const TurnpikeOptions& options = {}) {
    std::string routes = Fill(yaml, {{"GOOD", Node(backend_->port())},
                                     {"DEAD1", Node(dead1_.port())},
                                     {"DEAD2", Node(dead2_.port())}});
    ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, routes, options));
  }

  static inline std::unique_ptr<Backend> backend_;
  RefusedPort dead1_;
  RefusedPort dead2_;
  Turnpike gw_{kTurnpikeBin};
};

TEST_F(UpstreamErrorsTest, MissingUpstreamIdIs502) {
  StartRoutes(R"(
routes:
  - uri: /hello
    upstream_id: does-not-exist
  - uri: /echo
    upstream_id: ok
upstreams:
  - id: ok
    nodes: [{GOOD}]
#END
)");
  HttpResponse r = Get(gw_.port(), "/hello");
  EXPECT_EQ(r.status, 502) << r.DebugString();
  ExpectJsonError(r);
  EXPECT_EQ(Get(gw_.port(), "/echo").status, 200);  // the rest of the file applies
}

TEST_F(UpstreamErrorsTest, EmptyNodesIs503) {
  StartRoutes(R"(
routes:
  - uri: /list
    upstream: {nodes: []}
  - uri: /map
    upstream: {nodes: {}}
  - uri: /by-id
    upstream_id: empty
upstreams:
  - id: empty
    nodes: []
#END
)");
  for (const char* path : {"/list", "/map", "/by-id"}) {
    HttpResponse r = Get(gw_.port(), path);
    EXPECT_EQ(r.status, 503) << path << "\n" << r.DebugString();
    ExpectJsonError(r);
  }
}

TEST_F(UpstreamErrorsTest, ReadTimeoutIs504) {
  StartRoutes(R"(
routes:
  - uri: /delay/*
    upstream:
      nodes: [{GOOD}]
      timeout: {connect: 1, send: 1, read: 0.5}
#END
)");
  auto start = steady_clock::now();
  HttpResponse r = Get(gw_.port(), "/delay/3000");
  auto elapsed = steady_clock::now() - start;
  EXPECT_EQ(r.status, 504) << r.DebugString();
  ExpectJsonError(r);
  EXPECT_GE(elapsed, milliseconds(450));
  EXPECT_LT(elapsed, milliseconds(950)) << "the read timeout was not applied (or retried)";
}

TEST_F(UpstreamErrorsTest, RouteTimeoutOverridesUpstreamTimeout) {
  StartRoutes(R"(
routes:
  - uri: /delay/*
    host: short.test
    timeout: {connect: 1, send: 1, read: 0.5}
    upstream:
      nodes: [{GOOD}]
      timeout: {connect: 30, send: 30, read: 30}
  - uri: /delay/*
    host: long.test
    timeout: {connect: 5, send: 5, read: 5}
    upstream:
      nodes: [{GOOD}]
      timeout: {connect: 1, send: 1, read: 0.3}
#END
)");
  auto start = steady_clock::now();
  HttpResponse shorter = Get(gw_.port(), "/delay/3000", {{"Host", "short.test"}});
  EXPECT_EQ(shorter.status, 504) << shorter.DebugString();
  EXPECT_LT(steady_clock::now() - start, milliseconds(1500));
  HttpResponse longer = Get(gw_.port(), "/delay/800", {{"Host", "long.test"}});
  EXPECT_EQ(longer.status, 200) << longer.DebugString();
  EXPECT_EQ(longer.body, "delayed 800\n");
}

TEST_F(UpstreamErrorsTest, RetryReachesLiveNodeAfterRefusedOne) {
  StartRoutes(R"(
routes:
  - uri: /hello
    upstream:
      nodes: [{DEAD1}, {GOOD}]
#END
)");
  for (int i = 0; i < 10; ++i) {
    HttpResponse r = Get(gw_.port(), "/hello");
    ASSERT_EQ(r.status, 200) << "request " << i << "\n" << r.DebugString();
    EXPECT_EQ(r.body, "hello world\n");
    EXPECT_FALSE(r.HasHeader("X-APISIX-Upstream-Status")) << r.DebugString();
  }
}

TEST_F(UpstreamErrorsTest, AllNodesRefusedIs502WithUpstreamStatus) {
  StartRoutes(R"(
routes:
  - uri: /hello
    upstream:
      nodes: [{DEAD1}, {DEAD2}]
#END
)");
  HttpResponse r = Get(gw_.port(), "/hello");
  EXPECT_EQ(r.status, 502) << r.DebugString();
  EXPECT_TRUE(r.HasHeader("X-APISIX-Upstream-Status")) << r.DebugString();
  ExpectJsonError(r);
}

TEST_F(UpstreamErrorsTest, RetriesZeroExposesRefusedNode) {
  TurnpikeOptions options;
  options.worker_processes = 1;  // one balancer state, so round robin alternates per request
  StartRoutes(R"(
routes:
  - uri: /hello
    upstream:
      retries: 0
      nodes: [{DEAD1}, {GOOD}]
#END
)",
              options);
  int ok = 0, bad_gateway = 0;
  for (int i = 0; i < 20; ++i) {
    HttpResponse r = Get(gw_.port(), "/hello");
    if (r.status == 200) ++ok;
    if (r.status == 502) {
      ++bad_gateway;
      ExpectJsonError(r);
    }
    EXPECT_TRUE(r.status == 200 || r.status == 502) << r.DebugString();
  }
  EXPECT_GT(bad_gateway, 0) << "with retries: 0 the refused node must surface as 502";
  EXPECT_GT(ok, 0);
}

TEST_F(UpstreamErrorsTest, ConnectionResetBeforeResponseIs502) {
  StartRoutes(R"(
routes:
  - uri: /*
    upstream:
      nodes: [{GOOD}]
#END
)");
  HttpConnection c(gw_.port());
  HttpResponse r = c.RoundTrip(HttpRequest{"GET", "/reset", {}, ""}.Serialize(gw_.port()));
  EXPECT_EQ(r.status, 502) << r.DebugString();
  ExpectJsonError(r);
  // The client connection survives an upstream failure (unless the gateway says otherwise).
  if (!r.ConnectionClosing()) {
    HttpResponse next = c.RoundTrip(HttpRequest{"GET", "/hello", {}, ""}.Serialize(gw_.port()));
    EXPECT_EQ(next.status, 200) << next.DebugString();
  }
}

}  // namespace
}  // namespace turnpike::itest
