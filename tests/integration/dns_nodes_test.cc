// Upstream nodes given by domain name (apisix-behaviour.md §3.3, §3.6): resolved on the
// control thread without blocking the snapshot build, published as the upstream's node set
// when the answer comes; a name that does not resolve leaves its upstream without nodes
// (503) and never stops the others. Names used: `localhost` (the hosts file: loopback) and
// the reserved `.invalid` TLD, which the resolver fails without sending a query, so nothing
// but loopback is ever contacted.

#include <chrono>
#include <string>

#include "integration/itest.h"

namespace turnpike::itest {
namespace {

using std::chrono::seconds;

class DnsNodesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backend_ = StartBackend(kBackendBin, "D"); }
  static void TearDownTestSuite() { backend_.reset(); }
  void SetUp() override { ASSERT_NE(backend_, nullptr); }

  // {LOCAL} = the backend by name, {GOOD} = the backend by IP literal.
  std::string Routes(const std::string& yaml) {
    std::string port = std::to_string(backend_->port());
    return Fill(yaml, {{"LOCAL", "{host: localhost, port: " + port + ", weight: 1}"},
                       {"GOOD", Node(backend_->port())},
                       {"PORT", port}});
  }

  void StartReady(const std::string& yaml) {
    status_port_ = FreePort();
    ASSERT_NE(status_port_, 0);
    TurnpikeOptions options;
    options.apisix_extra =
        "  status:\n    ip: 127.0.0.1\n    port: " + std::to_string(status_port_) + "\n";
    ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, Routes(yaml), options));
    ASSERT_TRUE(WaitForPort(status_port_, seconds(5)));
    // Ready waits for the first snapshot's names to have their first answers.
    ASSERT_TRUE(
        PollUntil([&] { return Get(status_port_, "/status/ready").status == 200; }, seconds(10)))
        << Get(status_port_, "/status/ready").DebugString();
  }

  static inline std::unique_ptr<Backend> backend_;
  Turnpike gw_{kTurnpikeBin};
  int status_port_ = 0;
};

constexpr char kRoutes[] = R"(
routes:
  - uris: [/hello, /echo]
    upstream:
      pass_host: node
      nodes: [{LOCAL}]
  - uri: /gone
    upstream:
      nodes: [{host: backend.invalid, port: 80, weight: 1}]
  - uri: /bytes/*
    upstream:
      nodes: [{host: gone.invalid, port: 80, weight: 1}, {GOOD}]
  - uri: /status/*
    upstream_id: named
upstreams:
  - id: named
    nodes:
      "localhost:{PORT}": 1
#END
)";

TEST_F(DnsNodesTest, LocalhostServesOnceReady) {
  ASSERT_NO_FATAL_FAILURE(StartReady(kRoutes));
  for (const char* path : {"/hello", "/status/200"}) {
    HttpResponse r = Get(gw_.port(), path);
    ASSERT_EQ(r.status, 200) << path << "\n" << r.DebugString();
    EXPECT_EQ(BackendOf(r), "D");
  }
  // pass_host: node sends the configured name, not the address it resolved to.
  HttpResponse r = Get(gw_.port(), "/echo");
  ASSERT_EQ(r.status, 200) << r.DebugString();
  EXPECT_EQ(Echo(r).Header("host").value_or(""), "localhost:" + std::to_string(backend_->port()));
}

TEST_F(DnsNodesTest, UnresolvableNameIs503AndSparesTheRest) {
  ASSERT_NO_FATAL_FAILURE(StartReady(kRoutes));
  HttpResponse gone = Get(gw_.port(), "/gone");
  EXPECT_EQ(gone.status, 503) << gone.DebugString();
  ExpectJsonError(gone);
  for (int i = 0; i < 6; ++i) {
    HttpResponse r = Get(gw_.port(), "/bytes/3");
    ASSERT_EQ(r.status, 200) << "request " << i << "\n" << r.DebugString();
    EXPECT_FALSE(r.HasHeader("X-APISIX-Upstream-Status")) << "the unresolved node is never tried";
  }
  EXPECT_NE(gw_.Stderr().find("gone.invalid: cannot resolve"), std::string::npos) << gw_.Stderr();
}

TEST_F(DnsNodesTest, ReloadKeepsResolvedNodes) {
  ASSERT_NO_FATAL_FAILURE(StartReady(kRoutes));
  ASSERT_EQ(Get(gw_.port(), "/hello").status, 200);
  // A reload that changes routes but not the named upstream: its resolved set stays, so
  // the very first request after the switch is served (no 503 window).
  std::string more = std::string(kRoutes);
  more.insert(more.find("upstreams:"), "  - uri: /echo/extra\n    upstream: {nodes: [{GOOD}]}\n");
  ASSERT_TRUE(gw_.RewriteRoutes(Routes(more)));
  ASSERT_TRUE(gw_.Reload());
  ASSERT_TRUE(PollUntil([&] { return Get(gw_.port(), "/echo/extra").status == 200; }, seconds(10)));
  for (const char* path : {"/hello", "/status/200"}) {
    HttpResponse r = Get(gw_.port(), path);
    EXPECT_EQ(r.status, 200) << path << "\n" << r.DebugString();
  }
}

}  // namespace
}  // namespace turnpike::itest
