// Upstream health checks through the daemon (reference §3.4), with real backends that go down
// and up: active http checks (the backend's /health status, /health/set/<code>) and tcp checks
// (a backend stopped and started again on its port), passive checks from proxied answers,
// fail-open when every node is unhealthy, checkers that start on first use, state kept across
// a reload, apisix.disable_upstream_healthcheck, and apisix_upstream_status.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "integration/itest.h"

namespace turnpike::itest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Fast thresholds: one failed probe takes a node out, one good probe brings it back.
constexpr char kActiveHttp[] =
    "checks:\n"
    "      active:\n"
    "        http_path: /health\n"
    "        healthy: {interval: 1, successes: 1}\n"
    "        unhealthy: {interval: 1, http_failures: 1}\n";

class HealthCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = StartBackend(kBackendBin, "A");
    b_ = StartBackend(kBackendBin, "B");
    ASSERT_TRUE(a_ && b_);
  }

  // One route /* to upstream u of A and B with `checks` (YAML at the upstream's indentation
  // + 2), plus `options`; the prometheus exporter on a free port.
  std::string Routes(const std::string& checks, const std::string& extra_route = "") {
    return Fill(R"(
routes:
  - uri: /*
    upstream_id: u
{EXTRA}
upstreams:
  - id: u
    nodes: [{A}, {B}]
    {CHECKS}
#END
)",
                {{"A", Node(a_->port())},
                 {"B", Node(b_->port())},
                 {"CHECKS", checks},
                 {"EXTRA", extra_route}});
  }
  void Start(const std::string& checks, TurnpikeOptions options = {}) {
    export_port_ = FreePort();
    ASSERT_NE(export_port_, 0);
    options.apisix_extra += "  show_upstream_status_in_response_header: true\n";
    options.top_extra +=
        "plugin_attr:\n  prometheus:\n    export_addr:\n      ip: 127.0.0.1\n"
        "      port: " +
        std::to_string(export_port_) + "\n";
    ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, Routes(checks), options));
  }

  static void SetHealth(Backend& b, int status) {
    ASSERT_EQ(Get(b.port(), "/health/set/" + std::to_string(status)).status, 200);
  }
  static int Hits(Backend& b) { return std::stoi(Get(b.port(), "/health/hits").body); }

  // The backends that answered `n` requests to `target` through the gateway (one letter
  // each, "" for a failed request), each on a fresh connection.
  std::string Answers(int n, const std::string& target = "/hello") {
    std::string out;
    for (int i = 0; i < n; ++i) {
      HttpResponse r = Get(gw_.port(), target);
      out += r.status == 200 ? BackendOf(r) : "-";
    }
    return out;
  }
  // Polls until `n` requests in a row all go to `only` (and never retried: a node taken out
  // of the balancer sees no attempt at all).
  bool OnlyOn(const std::string& only, milliseconds timeout = milliseconds(8000)) {
    return PollUntil(
        [&] {
          for (int i = 0; i < 8; ++i) {
            HttpResponse r = Get(gw_.port(), "/hello");
            if (r.status != 200 || BackendOf(r) != only ||
                r.Header("X-APISIX-Upstream-Status") != "200") {
              return false;
            }
          }
          return true;
        },
        timeout, milliseconds(100));
  }
  bool BothServe(milliseconds timeout = milliseconds(8000)) {
    return PollUntil(
        [&] {
          std::string got = Answers(8);
          return got.find('A') != std::string::npos && got.find('B') != std::string::npos &&
                 got.find('-') == std::string::npos;
        },
        timeout, milliseconds(100));
  }
  std::string Metric(int port) {
    return "apisix_upstream_status{name=\"/apisix/upstreams/u\",ip=\"127.0.0.1\",port=\"" +
           std::to_string(port) + "\"} ";
  }
  std::string Scrape() { return Get(export_port_, "/apisix/prometheus/metrics").body; }
  bool ScrapeHas(const std::string& line, milliseconds timeout = milliseconds(5000)) {
    return PollUntil([&] { return Scrape().find(line) != std::string::npos; }, timeout,
                     milliseconds(100));
  }

  std::unique_ptr<Backend> a_, b_;
  Turnpike gw_{kTurnpikeBin};
  int export_port_ = 0;
};

TEST_F(HealthCheckTest, ActiveHttpTakesANodeOutAndBringsItBack) {
  ASSERT_NO_FATAL_FAILURE(Start(kActiveHttp));
  ASSERT_TRUE(BothServe());
  EXPECT_TRUE(ScrapeHas(Metric(b_->port()) + "1"));
  EXPECT_TRUE(ScrapeHas(Metric(a_->port()) + "1"));

  SetHealth(*b_, 503);
  EXPECT_TRUE(OnlyOn("A")) << "B answers /health with 503: out of the balancer";
  EXPECT_TRUE(ScrapeHas(Metric(b_->port()) + "0")) << Scrape();
  EXPECT_NE(Scrape().find(Metric(a_->port()) + "1"), std::string::npos);

  SetHealth(*b_, 200);
  EXPECT_TRUE(BothServe()) << "B is healthy again";
  EXPECT_TRUE(ScrapeHas(Metric(b_->port()) + "1"));
  EXPECT_NE(gw_.Stderr().find("target 127.0.0.1:" + std::to_string(b_->port()) +
                              " (127.0.0.1) is now unhealthy (active http failure)"),
            std::string::npos)
      << gw_.Stderr();
}

TEST_F(HealthCheckTest, StatusesInNeitherListAreIgnored) {
  ASSERT_NO_FATAL_FAILURE(Start(kActiveHttp));
  ASSERT_TRUE(BothServe());
  SetHealth(*b_, 418);  // neither healthy (200, 302) nor unhealthy: not counted
  const int before = Hits(*b_);
  ASSERT_TRUE(PollUntil([&] { return Hits(*b_) >= before + 2; }, seconds(5)));
  EXPECT_TRUE(BothServe(milliseconds(100)));
}

TEST_F(HealthCheckTest, ProbesStartOnFirstUse) {
  ASSERT_NO_FATAL_FAILURE(Start(kActiveHttp));
  std::this_thread::sleep_for(milliseconds(2500));  // two intervals, no request yet
  EXPECT_EQ(Hits(*a_), 0) << "APISIX creates a checker on the upstream's first request";
  EXPECT_EQ(Scrape().find("apisix_upstream_status"), std::string::npos);
  ASSERT_EQ(Get(gw_.port(), "/hello").status, 200);
  EXPECT_TRUE(PollUntil([&] { return Hits(*a_) > 0 && Hits(*b_) > 0; }, seconds(5)));
  // About one probe per target and interval (one checker, not one per worker).
  std::this_thread::sleep_for(milliseconds(3000));
  const int a = Hits(*a_);
  EXPECT_GE(a, 2);
  EXPECT_LE(a, 6) << "two workers must not probe twice";
}

TEST_F(HealthCheckTest, ActiveTcpFollowsTheNodeProcess) {
  ASSERT_NO_FATAL_FAILURE(
      Start("checks:\n"
            "      active:\n"
            "        type: tcp\n"
            "        healthy: {interval: 1, successes: 1}\n"
            "        unhealthy: {interval: 1, tcp_failures: 1}\n"));
  ASSERT_TRUE(BothServe());
  const int b_port = b_->port();
  b_.reset();  // B stops: connections are refused
  EXPECT_TRUE(OnlyOn("A")) << "no attempt at B (no 502 retried) once the probe failed";
  EXPECT_TRUE(ScrapeHas(Metric(b_port) + "0"));

  std::string error;
  b_ = Backend::Start(kBackendBin, "B", &error, b_port);
  ASSERT_TRUE(b_) << error;
  EXPECT_TRUE(BothServe()) << "B is back on its port";
  EXPECT_TRUE(ScrapeHas(Metric(b_port) + "1"));
}

TEST_F(HealthCheckTest, PassiveReportsTakeANodeOut) {
  // Active probes far apart (first one after 300 s): only passive reports count here.
  ASSERT_NO_FATAL_FAILURE(
      Start("checks:\n"
            "      active:\n"
            "        http_path: /health\n"
            "        healthy: {interval: 300}\n"
            "        unhealthy: {interval: 300}\n"
            "      passive:\n"
            "        unhealthy: {http_statuses: [500], http_failures: 2}\n"));
  SetHealth(*b_, 500);
  // Requests for /health are proxied: B answers 500 (passed through), A 200.
  std::string got = Answers(12, "/health");
  EXPECT_NE(got.find('-'), std::string::npos) << got;
  EXPECT_TRUE(PollUntil([&] { return Answers(10, "/health") == std::string(10, 'A'); }, seconds(5)))
      << "after two 500s B is out";
  EXPECT_TRUE(ScrapeHas(Metric(b_->port()) + "0"));
  EXPECT_EQ(Hits(*a_) + Hits(*b_) >= 10, true);
}

TEST_F(HealthCheckTest, PassiveConnectFailures) {
  ASSERT_NO_FATAL_FAILURE(
      Start("checks:\n"
            "      active:\n"
            "        type: tcp\n"
            "        healthy: {interval: 300}\n"
            "        unhealthy: {interval: 300}\n"
            "      passive:\n"
            "        unhealthy: {tcp_failures: 1}\n"));
  ASSERT_TRUE(BothServe());
  b_.reset();
  // The first attempts at B are refused and retried on A (X-APISIX-Upstream-Status: 502,
  // 200); once reported, B is skipped.
  EXPECT_TRUE(OnlyOn("A", milliseconds(5000)));
}

TEST_F(HealthCheckTest, AllUnhealthyFailsOpen) {
  ASSERT_NO_FATAL_FAILURE(Start(kActiveHttp));
  ASSERT_TRUE(BothServe());
  SetHealth(*a_, 500);
  SetHealth(*b_, 500);
  ASSERT_TRUE(ScrapeHas(Metric(a_->port()) + "0"));
  ASSERT_TRUE(ScrapeHas(Metric(b_->port()) + "0"));
  EXPECT_TRUE(BothServe(milliseconds(500))) << "every node unhealthy: all are used";
  EXPECT_TRUE(PollUntil(
      [&] {
        return gw_.Stderr().find("all 2 nodes are unhealthy, using all of them") !=
               std::string::npos;
      },
      seconds(3)))
      << gw_.Stderr();
}

TEST_F(HealthCheckTest, ReloadKeepsTheState) {
  // Unhealthy targets are probed again only after 300 s: B stays out unless its state is lost.
  std::string checks = kActiveHttp;
  checks.replace(checks.find("unhealthy: {interval: 1"), 23, "unhealthy: {interval: 300");
  ASSERT_NO_FATAL_FAILURE(Start(checks));
  ASSERT_TRUE(BothServe());
  SetHealth(*b_, 500);
  ASSERT_TRUE(OnlyOn("A"));
  SetHealth(*b_, 200);
  // A reload with another route; upstream u keeps its nodes and its checks.
  ASSERT_TRUE(gw_.RewriteRoutes(Routes(checks, "  - uri: /other\n    upstream_id: u\n")));
  ASSERT_TRUE(gw_.Reload());
  ASSERT_TRUE(
      PollUntil([&] { return gw_.Stderr().find("config version 2 loaded") != std::string::npos; },
                seconds(5)));
  EXPECT_EQ(Answers(8), "AAAAAAAA") << "B is still unhealthy after the reload";
  EXPECT_NE(Scrape().find(Metric(b_->port()) + "0"), std::string::npos);

  // Removing the checks drops the checker (and its metric).
  ASSERT_TRUE(gw_.RewriteRoutes(Routes("")));
  ASSERT_TRUE(gw_.Reload());
  EXPECT_TRUE(BothServe());
  EXPECT_TRUE(PollUntil(
      [&] { return Scrape().find("apisix_upstream_status") == std::string::npos; }, seconds(5)));
}

TEST_F(HealthCheckTest, ChangedChecksStartAfresh) {
  ASSERT_NO_FATAL_FAILURE(Start(kActiveHttp));
  ASSERT_TRUE(BothServe());
  SetHealth(*b_, 500);
  ASSERT_TRUE(OnlyOn("A"));
  // New checks (another path that B answers 404: not in unhealthy's list for tcp... use a
  // healthy path): the new checker starts with every target healthy.
  std::string checks = kActiveHttp;
  checks.replace(checks.find("/health"), 7, "/hello");
  ASSERT_TRUE(gw_.RewriteRoutes(Routes(checks)));
  ASSERT_TRUE(gw_.Reload());
  EXPECT_TRUE(BothServe()) << "B answers /hello: healthy under the new checks";
}

TEST_F(HealthCheckTest, DisabledByConfig) {
  TurnpikeOptions options;
  options.apisix_extra = "  disable_upstream_healthcheck: true\n";
  ASSERT_NO_FATAL_FAILURE(Start(kActiveHttp, options));
  SetHealth(*b_, 500);
  ASSERT_TRUE(BothServe());
  std::this_thread::sleep_for(milliseconds(2500));
  EXPECT_TRUE(BothServe(milliseconds(100)));
  EXPECT_EQ(Hits(*a_), 0);
  EXPECT_EQ(Hits(*b_), 0);
  EXPECT_EQ(Scrape().find("apisix_upstream_status"), std::string::npos);
}

}  // namespace
}  // namespace turnpike::itest
