// Upstreams discovered through Consul (apisix-behaviour.md §3.5, §5.4) through the daemon:
// config.yaml's `discovery.consul.servers` points at the FAKE Consul agent of
// support/fake_consul.h, running in the test, whose registry the test changes. Passing
// instances spread over two backends, a change picked up at once by the blocking queries, the
// agent going down (the last good nodes keep serving), the dump written and loaded by a daemon
// started while the agent is down, skip_services with default_service, sort_type, and bad
// `discovery.consul` sections.

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "integration/discovery_fixture.h"
#include "support/fake_consul.h"

namespace turnpike::itest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeConsul;

class DiscoveryConsulTest : public DiscoveryTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(DiscoveryTest::SetUp());
    ASSERT_TRUE(consul_.Start());
    consul_.Register(FakeConsul::Make("web-a", "web", "127.0.0.1", a_->port()));
    consul_.Register(FakeConsul::Make("web-b", "web", "127.0.0.1", b_->port()));
    dump_path_ =
        ::testing::TempDir() + "turnpike_consul_dump_" + std::to_string(getpid()) + ".json";
    std::remove(dump_path_.c_str());
  }
  void TearDown() override { std::remove(dump_path_.c_str()); }

  static std::string Routes() {
    return R"(
routes:
  - uri: /status/*
    upstream_id: web
  - uri: /none
    upstream:
      discovery_type: consul
      service_name: none
upstreams:
  - id: web
    discovery_type: consul
    service_name: web
#END
)";
  }

  // consul_ as the one server, then `extra`.
  std::string Discovery(const std::string& extra) const override {
    return "  consul:\n    servers:\n      - \"" + consul_.url() + "\"\n" + extra;
  }

  using DiscoveryTest::StartReady;
  void StartReady(const std::string& consul_extra = "") {
    StartReady(Routes(), Options(consul_extra));
  }

  std::string Sequence(int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += BackendOf(Get(gw_.port(), "/status/200"));
    return out;
  }
  std::string DumpFile() const {
    std::ifstream in(dump_path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  FakeConsul consul_;
  std::string dump_path_;
};

TEST_F(DiscoveryConsulTest, ServesPassingInstancesAndPicksUpChangesAtOnce) {
  ASSERT_NO_FATAL_FAILURE(StartReady());
  EXPECT_EQ(Spread("/status/200", 10), (Spreads{{"A", 5}, {"B", 5}}));
  // Not in Consul: no nodes, 503 as APISIX.
  HttpResponse none = Get(gw_.port(), "/none");
  EXPECT_EQ(none.status, 503) << none.DebugString();
  ExpectJsonError(none);
  // B's check turns critical: the blocking queries return, B is gone within a moment (the
  // wait is 60 s, so no poll could explain it).
  ASSERT_TRUE(PollUntil([&] { return consul_.blocked() == 2; }, seconds(5)));
  auto start = std::chrono::steady_clock::now();
  consul_.SetStatus("web-b", "critical");
  ASSERT_TRUE(PollUntil([&] { return Spread("/status/200", 4) == Spreads{{"A", 4}}; }, seconds(5)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(2));
  // Healthy again, and A deregistered.
  consul_.SetStatus("web-b", "passing");
  consul_.Deregister("web-a");
  ASSERT_TRUE(PollUntil([&] { return Spread("/status/200", 4) == Spreads{{"B", 4}}; }, seconds(5)));
}

TEST_F(DiscoveryConsulTest, AConsulGoneKeepsTheLastNodes) {
  ASSERT_NO_FATAL_FAILURE(StartReady());
  EXPECT_EQ(Spread("/status/200", 4).size(), 2u);
  consul_.Stop();
  ASSERT_NO_FATAL_FAILURE(
      KeepsServing("/status/200", {{"A", 1}, {"B", 1}}, seconds(3)));  // several back-offs
  EXPECT_NE(gw_.Stderr().find("keeping the last nodes"), std::string::npos) << gw_.Stderr();
}

TEST_F(DiscoveryConsulTest, TheDumpIsWrittenAndServesADaemonStartedWhileConsulIsDown) {
  std::string dump = "    dump:\n      path: " + dump_path_ + "\n";
  ASSERT_NO_FATAL_FAILURE(StartReady(dump));
  // (A first round may run before the snapshot watches "web": the file then follows within
  // the dump's 1 s interval.)
  nlohmann::json written;
  ASSERT_TRUE(PollUntil(
      [&] {
        written = nlohmann::json::parse(DumpFile(), nullptr, false);
        return written.is_object() && written["services"].contains("web");
      },
      seconds(5)))
      << DumpFile();
  EXPECT_EQ(written["services"]["web"].size(), 2u) << written.dump();
  EXPECT_FALSE(written["services"].contains("none"));
  ASSERT_TRUE(gw_.Stop().has_value());
  consul_.Stop();
  // A new daemon, Consul down: ready, serving the dump's nodes.
  Turnpike again(kTurnpikeBin);
  ASSERT_NO_FATAL_FAILURE(StartReady(again, Routes(), Options(dump)));
  EXPECT_EQ(Spread(again, "/status/200", 4), (Spreads{{"A", 2}, {"B", 2}}));
  EXPECT_NE(again.Stderr().find("no nodes from it yet"), std::string::npos) << again.Stderr();
}

TEST_F(DiscoveryConsulTest, SkippedServicesGetTheDefaultService) {
  std::string extra =
      "    skip_services: [web]\n    default_service:\n      host: 127.0.0.1\n"
      "      port: " +
      std::to_string(a_->port()) + "\n";
  ASSERT_NO_FATAL_FAILURE(StartReady(extra));
  EXPECT_EQ(Spread("/status/200", 4), (Spreads{{"A", 4}}));
  // An unknown service too (the backend answers /none with its 404).
  HttpResponse none = Get(gw_.port(), "/none");
  EXPECT_EQ(BackendOf(none), "A") << none.DebugString();
  EXPECT_EQ(consul_.Count("/v1/health/service/web"), 0);
}

TEST_F(DiscoveryConsulTest, SortTypeOrdersTheNodesTheBalancerTakesInTurn) {
  // Consul's order (by service ID here) puts the higher port first; port_sort the lower.
  bool a_low = a_->port() < b_->port();
  consul_.Deregister("web-a");
  consul_.Deregister("web-b");
  consul_.Register(FakeConsul::Make("1", "web", "127.0.0.1", a_low ? b_->port() : a_->port()));
  consul_.Register(FakeConsul::Make("2", "web", "127.0.0.1", a_low ? a_->port() : b_->port()));
  std::string low = a_low ? "A" : "B";
  std::string high = a_low ? "B" : "A";
  ASSERT_NO_FATAL_FAILURE(StartReady("    sort_type: origin\n"));
  EXPECT_EQ(Sequence(4), high + low + high + low);
  ASSERT_TRUE(gw_.Stop().has_value());
  ASSERT_NO_FATAL_FAILURE(StartReady("    sort_type: port_sort\n"));
  EXPECT_EQ(Sequence(4), low + high + low + high);
}

TEST_F(DiscoveryConsulTest, AReloadWatchesANewServiceAndKeepsTheOthers) {
  consul_.Register(FakeConsul::Make("echo", "echo", "127.0.0.1", b_->port()));
  ASSERT_NO_FATAL_FAILURE(StartReady());
  EXPECT_EQ(Spread("/status/200", 2).size(), 2u);
  EXPECT_EQ(consul_.Count("/v1/health/service/echo"), 0) << "no upstream names it yet";
  std::string routes = Routes();
  routes.insert(routes.find("upstreams:"),
                "  - uri: /echo\n    upstream: {discovery_type: consul, service_name: echo}\n");
  ASSERT_TRUE(gw_.RewriteRoutes(routes));
  ASSERT_TRUE(gw_.Reload());
  ASSERT_TRUE(PollUntil([&] { return BackendOf(Get(gw_.port(), "/echo")) == "B"; }, seconds(5)))
      << Get(gw_.port(), "/echo").DebugString();
  EXPECT_EQ(Spread("/status/200", 4), (Spreads{{"A", 2}, {"B", 2}}));
}

TEST_F(DiscoveryConsulTest, BadConsulSectionsStopTheDaemon) {
  ExpectBadSectionsStopTheDaemon(
      Routes(), {
                    {"  consul: {}\n", "discovery.consul: property \"servers\" is required"},
                    {"  consul:\n    servers: [\"https://127.0.0.1:8500\"]\n",
                     "discovery.consul: servers[0]: only http://address:port is supported"},
                    {"  consul:\n    servers: [\"http://127.0.0.1:8500\"]\n    sort_type: random\n",
                     "discovery.consul: sort_type: must be one of"},
                });
}

}  // namespace
}  // namespace turnpike::itest
