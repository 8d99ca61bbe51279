// Upstreams discovered by DNS (apisix-behaviour.md §3.5, §5.2) through the daemon: config.yaml
// `discovery.dns.servers` points at a real dnsmasq on loopback (support/dnsmasq.h) whose
// records the test writes and changes. A records with a `name:port` service name, SRV records
// spreading requests over two backends, a record change picked up after its TTL, the DNS
// server going away (the last good nodes keep serving), a name without records (503), and the
// config errors: a discovery_type not configured (the item is skipped), an unknown provider
// and a bad `discovery.dns` section (the daemon does not start).

#include <chrono>
#include <map>
#include <string>

#include "integration/discovery_fixture.h"
#include "support/dnsmasq.h"

namespace turnpike::itest {
namespace {

using std::chrono::seconds;
using testing::DnsServer;

class DiscoveryDnsTest : public DiscoveryTest {
 protected:
  void SetUp() override {
    if (!DnsServer::Available()) GTEST_SKIP() << "dnsmasq is not installed (dnsmasq-base)";
    ASSERT_NO_FATAL_FAILURE(DiscoveryTest::SetUp());
  }

  // SRV records for svc.test: node.test (127.0.0.1) on the ports of `backends`.
  static std::string Srv(std::initializer_list<const Backend*> backends) {
    std::string records = "host-record=web.test,127.0.0.1\nhost-record=node.test,127.0.0.1\n";
    for (const Backend* b : backends) {
      records += "srv-host=_http._tcp.svc.test,node.test," + std::to_string(b->port()) + ",1,1\n";
    }
    return records;
  }

  std::string Routes() const {
    return Fill(R"(
routes:
  - uri: /hello
    upstream:
      discovery_type: dns
      service_name: "web.test:{PORT_A}"
  - uri: /status/*
    upstream_id: srv
  - uri: /none
    upstream:
      discovery_type: dns
      service_name: none.test
upstreams:
  - id: srv
    discovery_type: dns
    service_name: _http._tcp.svc.test
#END
)",
                {{"PORT_A", std::to_string(a_->port())}});
  }

  // dns_ as the one server, then `extra`.
  std::string Discovery(const std::string& extra) const override {
    return "  dns:\n    servers:\n      - \"" + dns_.address() + "\"\n" + extra;
  }

  using DiscoveryTest::StartReady;
  void StartReady() { StartReady(Routes(), Options()); }

  DnsServer dns_;
};

TEST_F(DiscoveryDnsTest, ServesDiscoveredNodesOnceReady) {
  ASSERT_TRUE(dns_.Start(Srv({a_.get(), b_.get()}))) << dns_.error();
  ASSERT_NO_FATAL_FAILURE(StartReady());
  // An A record, the port from service_name.
  HttpResponse hello = Get(gw_.port(), "/hello");
  ASSERT_EQ(hello.status, 200) << hello.DebugString();
  EXPECT_EQ(BackendOf(hello), "A");
  // Two SRV records of equal weight and priority: round robin over both ports.
  EXPECT_EQ(Spread("/status/200", 10), (Spreads{{"A", 5}, {"B", 5}}));
  // No records at all: no nodes, 503 as APISIX.
  HttpResponse none = Get(gw_.port(), "/none");
  EXPECT_EQ(none.status, 503) << none.DebugString();
  ExpectJsonError(none);
}

TEST_F(DiscoveryDnsTest, ChangesFollowTheTtlAndAServerGoneKeepsTheLastNodes) {
  ASSERT_TRUE(dns_.Start(Srv({a_.get(), b_.get()}), /*ttl=*/1)) << dns_.error();
  ASSERT_NO_FATAL_FAILURE(StartReady());
  EXPECT_EQ(Spread("/status/200", 4).size(), 2u);
  // B only, then A only: each picked up within a few seconds (TTL 1 s, refresh >= 1 s).
  for (const Backend* only : {b_.get(), a_.get()}) {
    ASSERT_TRUE(dns_.SetRecords(Srv({only}))) << dns_.error();
    std::string id = only == a_.get() ? "A" : "B";
    ASSERT_TRUE(PollUntil(
        [&] {
          return Spread("/status/200", 4) == Spreads{{id, 4}};
        },
        seconds(10)))
        << "still " << ::testing::PrintToString(Spread("/status/200", 4));
  }
  // The DNS server goes away: lookups fail, the last good nodes stay.
  dns_.Kill();
  auto until = std::chrono::steady_clock::now() + seconds(4);  // several TTLs and retries
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_EQ(Spread("/status/200", 2), (Spreads{{"A", 2}}));
    ASSERT_EQ(Get(gw_.port(), "/hello").status, 200);
  }
  EXPECT_NE(gw_.Stderr().find("keeping its last nodes"), std::string::npos) << gw_.Stderr();
}

TEST_F(DiscoveryDnsTest, AReloadWatchesNewServicesAndKeepsKnownOnes) {
  ASSERT_TRUE(dns_.Start(Srv({a_.get(), b_.get()}))) << dns_.error();
  ASSERT_NO_FATAL_FAILURE(StartReady());
  ASSERT_EQ(Get(gw_.port(), "/hello").status, 200);
  // /echo names a service no upstream used: it is looked up once the reload is published.
  std::string routes = Routes();
  routes.insert(routes.find("upstreams:"),
                "  - uri: /echo\n    upstream: {discovery_type: dns, service_name: \"web.test:" +
                    std::to_string(b_->port()) + "\"}\n");
  ASSERT_TRUE(gw_.RewriteRoutes(routes));
  ASSERT_TRUE(gw_.Reload());
  ASSERT_TRUE(PollUntil([&] { return Get(gw_.port(), "/echo").status == 200; }, seconds(10)))
      << Get(gw_.port(), "/echo").DebugString();
  EXPECT_EQ(BackendOf(Get(gw_.port(), "/echo")), "B");
  // The services the reload kept served throughout, with their nodes.
  EXPECT_EQ(BackendOf(Get(gw_.port(), "/hello")), "A");
  EXPECT_EQ(Spread("/status/200", 4).size(), 2u);
}

TEST_F(DiscoveryDnsTest, ADiscoveryTypeNotConfiguredSkipsTheItem) {
  ASSERT_TRUE(dns_.Start(Srv({a_.get()}))) << dns_.error();
  std::string routes = Routes();
  routes.insert(routes.find("upstreams:"),
                "  - uri: /nacos\n    upstream: {discovery_type: nacos, service_name: users}\n");
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, routes, Options()));
  ASSERT_TRUE(PollUntil([&] { return Get(gw_.port(), "/hello").status == 200; }, seconds(10)));
  EXPECT_EQ(Get(gw_.port(), "/nacos").status, 404) << "the route was skipped";
  EXPECT_NE(gw_.Stderr().find("discovery type \"nacos\" is not configured"), std::string::npos)
      << gw_.Stderr();
}

TEST_F(DiscoveryDnsTest, BadDiscoverySectionsStopTheDaemon) {
  ExpectBadSectionsStopTheDaemon(
      Routes(),
      {
          {"  eureka: {}\n", "discovery.eureka: unknown discovery type"},
          {"  dns: {}\n", "discovery.dns: exactly one of \"servers\" and \"resolv_conf\""},
          {"  dns:\n    servers: [\"dns.example\"]\n", "discovery.dns: servers[0]:"},
          {"  dns:\n    servers: [\"127.0.0.1\"]\n    order: [MX]\n",
           "discovery.dns: order[0]: must be one of"},
      });
}

}  // namespace
}  // namespace turnpike::itest
