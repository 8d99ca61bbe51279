// The dns discovery provider against a real DNS server: dnsmasq on 127.0.0.1 and a free port
// (support/dnsmasq.h), records from a file the test writes and then changes. A, AAAA, SRV (weights,
// priorities, ports, targets with several addresses), `order` with `last`, TTL refresh, a server
// that goes away (last good nodes kept), a name without records (no nodes), and the config rules of
// `discovery.dns`.
#include "discovery/dns_provider.h"

#include <gtest/gtest.h>
#include <uv.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "support/dnsmasq.h"

namespace turnpike::discovery {
namespace {

using testing::DnsServer;

class RecordingSink final : public DiscoverySink {
 public:
  void Publish(const ServiceRef& service, DiscoveredNodesConstSharedPtr nodes) override {
    published.emplace_back(service, nodes != nullptr ? *nodes : DiscoveredNodes{});
  }
  std::vector<std::pair<ServiceRef, DiscoveredNodes>> published;
};

DiscoveredNodes Sorted(DiscoveredNodes nodes) {
  std::sort(nodes.begin(), nodes.end(), [](const DiscoveredNode& a, const DiscoveredNode& b) {
    return std::tie(a.host, a.port) < std::tie(b.host, b.port);
  });
  return nodes;
}

std::string Describe(const DiscoveredNodes& nodes) {
  std::string out;
  for (const DiscoveredNode& n : nodes) {
    out += n.host + ":" + std::to_string(n.port) + " w" + std::to_string(n.weight) + " p" +
           std::to_string(n.priority) + "; ";
  }
  return out.empty() ? "(none)" : out;
}

class DnsProviderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!DnsServer::Available()) GTEST_SKIP() << "dnsmasq is not installed (dnsmasq-base)";
    uv_loop_init(&loop_);
    config_.min_refresh_ms = 500;
    config_.retry_ms = 300;
    config_.timeout_ms = 300;
    config_.tries = 1;
  }
  void TearDown() override {
    if (!DnsServer::Available()) return;
    if (provider_ != nullptr) provider_->Stop();
    uv_run(&loop_, UV_RUN_DEFAULT);
    provider_.reset();
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }

  // Starts a provider asking `dns_` (unless servers were set).
  void StartProvider() {
    if (config_.servers.empty()) config_.servers = {dns_.address()};
    provider_ = std::make_unique<DnsProvider>(config_);
    ASSERT_TRUE(provider_->Start(DiscoveryEnvironment{&sink_, &loop_}).ok());
  }
  bool RunUntil(const std::function<bool()>& done, std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      uv_run(&loop_, UV_RUN_ONCE);
    }
    return true;
  }
  void RunFor(std::chrono::milliseconds d) {
    RunUntil([] { return false; }, d);
  }
  // Watches `name` and waits for its first answer.
  DiscoveredNodes First(const std::string& name) {
    size_t before = sink_.published.size();
    provider_->Watch(ServiceRef{name, {}});
    EXPECT_TRUE(RunUntil([&] { return sink_.published.size() > before; }, std::chrono::seconds(5)))
        << name << ": no answer";
    if (sink_.published.size() <= before) return {};
    EXPECT_EQ(sink_.published.back().first.service_name, name);
    return sink_.published.back().second;
  }

  uv_loop_t loop_{};
  DnsServer dns_;
  RecordingSink sink_;
  DnsProviderConfig config_;
  std::unique_ptr<DnsProvider> provider_;
};

TEST_F(DnsProviderTest, ARecordsGiveWeightOneNodesWithTheServiceNamePort) {
  ASSERT_TRUE(dns_.Start("host-record=web.test,127.0.0.2\nhost-record=web.test,127.0.0.3\n"))
      << dns_.error();
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  DiscoveredNodes with_port = Sorted(First("web.test:8080"));
  EXPECT_EQ(with_port, (DiscoveredNodes{{"127.0.0.2", 8080, 1, 0}, {"127.0.0.3", 8080, 1, 0}}))
      << Describe(with_port);
  // Without a port: the scheme's default (0).
  DiscoveredNodes bare = Sorted(First("web.test"));
  EXPECT_EQ(bare, (DiscoveredNodes{{"127.0.0.2", 0, 1, 0}, {"127.0.0.3", 0, 1, 0}}))
      << Describe(bare);
  EXPECT_TRUE(provider_->ready());
}

TEST_F(DnsProviderTest, AaaaWhenThereIsNoA) {
  ASSERT_TRUE(dns_.Start("host-record=six.test,::1\n")) << dns_.error();
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  DiscoveredNodes nodes = First("six.test:9000");
  EXPECT_EQ(nodes, (DiscoveredNodes{{"::1", 9000, 1, 0}})) << Describe(nodes);
}

constexpr char kSrvRecords[] =
    "srv-host=_http._tcp.svc.test,a.test,8001,10,30\n"
    "srv-host=_http._tcp.svc.test,b.test,8002,20,0\n"
    "host-record=a.test,127.0.0.2\n"
    "host-record=a.test,127.0.0.3\n"
    "host-record=b.test,127.0.0.4\n";

TEST_F(DnsProviderTest, SrvWeightsPrioritiesPortsAndSplitTargets) {
  ASSERT_TRUE(dns_.Start(kSrvRecords)) << dns_.error();
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  // a.test (weight 30) has two addresses: 15 each; b.test's weight 0 counts as 1. Priorities are
  // negated (lower SRV priority = higher node priority, used first).
  DiscoveredNodes nodes = Sorted(First("_http._tcp.svc.test"));
  EXPECT_EQ(nodes, (DiscoveredNodes{{"127.0.0.2", 8001, 15, -10},
                                    {"127.0.0.3", 8001, 15, -10},
                                    {"127.0.0.4", 8002, 1, -20}}))
      << Describe(nodes);
  // A port in service_name wins over the records' ports.
  DiscoveredNodes ported = Sorted(First("_http._tcp.svc.test:9000"));
  EXPECT_EQ(ported, (DiscoveredNodes{{"127.0.0.2", 9000, 15, -10},
                                     {"127.0.0.3", 9000, 15, -10},
                                     {"127.0.0.4", 9000, 1, -20}}))
      << Describe(ported);
}

TEST_F(DnsProviderTest, ANameWithoutRecordsHasNoNodes) {
  ASSERT_TRUE(dns_.Start("host-record=web.test,127.0.0.2\n")) << dns_.error();
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  EXPECT_TRUE(First("nothing.test").empty());
  EXPECT_EQ(provider_->stats().failures, 0u) << "NXDOMAIN is an answer, not a failure";
  EXPECT_TRUE(provider_->ready());
}

TEST_F(DnsProviderTest, OrderIsFollowedAndLastSkipsToTheTypeThatAnswered) {
  ASSERT_TRUE(dns_.Start("host-record=six.test,::1\n", /*ttl=*/0)) << dns_.error();
  config_.order = {DnsType::kLast, DnsType::kA, DnsType::kAaaa};
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  ASSERT_EQ(First("six.test"), (DiscoveredNodes{{"::1", 0, 1, 0}}));
  EXPECT_EQ(provider_->stats().queries, 2u) << "A (no data), then AAAA";
  // TTL 0: the next round starts after min_refresh_ms and asks AAAA first (`last`).
  ASSERT_TRUE(
      RunUntil([&] { return provider_->stats().lookups >= 2 && sink_.published.size() >= 2; },
               std::chrono::seconds(5)));
  EXPECT_EQ(provider_->stats().queries, 3u) << "the second round is one AAAA query";
  // Without `last`, and SRV first: SRV, A, AAAA every round.
  config_.order = {DnsType::kSrv, DnsType::kA, DnsType::kAaaa};
  provider_->Stop();
  uv_run(&loop_, UV_RUN_DEFAULT);
  sink_.published.clear();
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  ASSERT_EQ(First("six.test"), (DiscoveredNodes{{"::1", 0, 1, 0}}));
  EXPECT_EQ(provider_->stats().queries, 3u);
}

TEST_F(DnsProviderTest, TtlRefreshPicksUpAChange) {
  ASSERT_TRUE(dns_.Start("host-record=web.test,127.0.0.2\n", /*ttl=*/1)) << dns_.error();
  config_.min_refresh_ms = 200;
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  ASSERT_EQ(First("web.test"), (DiscoveredNodes{{"127.0.0.2", 0, 1, 0}}));
  ASSERT_TRUE(dns_.SetRecords("host-record=web.test,127.0.0.5\n")) << dns_.error();
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(RunUntil(
      [&] {
        return sink_.published.back().second == DiscoveredNodes{{"127.0.0.5", 0, 1, 0}};
      },
      std::chrono::seconds(5)))
      << Describe(sink_.published.back().second);
  // Within about the TTL (1 s), not the 1 h ceiling.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2500));
}

TEST_F(DnsProviderTest, AServerThatGoesAwayKeepsTheLastGoodNodes) {
  ASSERT_TRUE(dns_.Start(kSrvRecords, /*ttl=*/1)) << dns_.error();
  config_.min_refresh_ms = 200;
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  DiscoveredNodes good = First("_http._tcp.svc.test");
  ASSERT_EQ(good.size(), 3u) << Describe(good);
  size_t published = sink_.published.size();
  dns_.Kill();
  ASSERT_TRUE(RunUntil([&] { return provider_->stats().failures >= 2; }, std::chrono::seconds(5)));
  EXPECT_EQ(sink_.published.size(), published) << "a failed lookup publishes nothing";
  // Back, with other records: picked up at the next retry.
  ASSERT_TRUE(
      dns_.SetRecords("srv-host=_http._tcp.svc.test,b.test,8002,1,7\n"
                      "host-record=b.test,127.0.0.4\n"))
      << dns_.error();
  ASSERT_TRUE(
      RunUntil([&] { return sink_.published.size() > published; }, std::chrono::seconds(5)));
  EXPECT_EQ(sink_.published.back().second, (DiscoveredNodes{{"127.0.0.4", 8002, 7, -1}}));
}

TEST_F(DnsProviderTest, AFirstLookupThatFailsPublishesNoNodesSoReadinessDoesNotHang) {
  // Nothing listens on dns_'s port (never started).
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  provider_->Watch(ServiceRef{"web.test", {}});
  EXPECT_FALSE(provider_->ready());
  ASSERT_TRUE(RunUntil([&] { return !sink_.published.empty(); }, std::chrono::seconds(5)));
  EXPECT_TRUE(sink_.published.back().second.empty());
  EXPECT_TRUE(provider_->ready());
  EXPECT_GE(provider_->stats().failures, 1u);
}

TEST_F(DnsProviderTest, UnwatchStopsLookups) {
  ASSERT_TRUE(dns_.Start("host-record=web.test,127.0.0.2\n", /*ttl=*/0)) << dns_.error();
  config_.min_refresh_ms = 100;
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  provider_->Watch(ServiceRef{"web.test", {}});
  provider_->Unwatch(ServiceRef{"web.test", {}});  // before the answer: it is dropped
  RunFor(std::chrono::milliseconds(600));
  EXPECT_TRUE(sink_.published.empty());
  EXPECT_EQ(provider_->stats().lookups, 1u) << "no refresh for an unwatched service";
}

// Dump(): the control API's /v1/discovery/dns/dump, before and after answers, with a lookup
// that fails (the last good nodes shown, `failing` set).
TEST_F(DnsProviderTest, DumpShowsTheConfigAndEachServicesLastNodes) {
  ASSERT_TRUE(dns_.Start(kSrvRecords, /*ttl=*/1)) << dns_.error();
  config_.order = {DnsType::kLast, DnsType::kSrv, DnsType::kA};
  config_.min_refresh_ms = 200;
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  nlohmann::json empty = provider_->Dump();
  EXPECT_EQ(empty["config"], nlohmann::json::parse(R"({"servers":[")" + dns_.address() +
                                                   R"("],"order":["last","SRV","A"]})"));
  EXPECT_EQ(empty["services"], nlohmann::json::object());

  provider_->Watch(ServiceRef{"pending.test", {}});
  nlohmann::json pending = provider_->Dump()["services"]["pending.test"];
  EXPECT_EQ(pending["answered"], false);
  EXPECT_FALSE(pending.contains("nodes")) << "no answer yet";
  ASSERT_TRUE(RunUntil([&] { return !sink_.published.empty(); }, std::chrono::seconds(5)));

  ASSERT_EQ(First("_http._tcp.svc.test").size(), 3u);
  ASSERT_EQ(First("a.test:8080").size(), 2u);
  ASSERT_TRUE(First("nothing.test").empty());
  nlohmann::json services = provider_->Dump()["services"];
  nlohmann::json srv = services["_http._tcp.svc.test"];
  EXPECT_EQ(srv["answered"], true);
  EXPECT_EQ(srv["failing"], false);
  EXPECT_EQ(srv["record_type"], "SRV");
  ASSERT_TRUE(srv["nodes"].is_array());
  EXPECT_EQ(srv["nodes"].size(), 3u);
  for (const nlohmann::json& n : srv["nodes"]) {
    if (n["host"] == "127.0.0.4") {
      EXPECT_EQ(n, nlohmann::json::parse(
                       R"({"host":"127.0.0.4","weight":1,"port":8002,"priority":-20})"));
    }
  }
  EXPECT_TRUE(srv["next_lookup_ms"].is_number_unsigned());
  EXPECT_LE(srv["next_lookup_ms"].get<uint64_t>(), 1000u) << "TTL 1 s";
  nlohmann::json a = services["a.test:8080"];
  EXPECT_EQ(a["record_type"], "A");
  ASSERT_EQ(a["nodes"].size(), 2u);
  EXPECT_EQ(a["nodes"][0]["port"], 8080);
  EXPECT_EQ(a["nodes"][0]["weight"], 1);
  EXPECT_FALSE(a["nodes"][0].contains("priority")) << "A records carry no priority";
  nlohmann::json none = services["nothing.test"];
  EXPECT_EQ(none["nodes"], nlohmann::json::array());
  EXPECT_FALSE(none.contains("record_type")) << "no type had records";

  dns_.Kill();
  auto srv_now = [&] { return provider_->Dump()["services"]["_http._tcp.svc.test"]; };
  ASSERT_TRUE(RunUntil([&] { return srv_now()["failing"] == true; }, std::chrono::seconds(5)));
  nlohmann::json kept = srv_now();
  EXPECT_EQ(kept["nodes"], srv["nodes"]) << "the last good nodes";
}

TEST_F(DnsProviderTest, BadServiceNameHasNoNodes) {
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  EXPECT_TRUE(First("web.test:99999").empty());
  EXPECT_EQ(provider_->stats().lookups, 0u);
}

TEST(DnsAnswerTest, MalformedMessagesAreRejected) {
  std::vector<DnsRecord> records;
  EXPECT_FALSE(ParseDnsAnswer({0x12, 0x34, 0x81}, 1, &records));
  // Header claiming one answer, nothing after it.
  EXPECT_FALSE(ParseDnsAnswer({0x12, 0x34, 0x81, 0x80, 0, 0, 0, 1, 0, 0, 0, 0}, 1, &records));
  // One A answer (name = root) whose rdata is 3 bytes, not 4.
  EXPECT_FALSE(ParseDnsAnswer(
      {0x12, 0x34, 0x81, 0x80, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 5, 0, 3, 1, 2, 3}, 1,
      &records));
  // The same with 4 bytes: 1.2.3.4, TTL 5.
  ASSERT_TRUE(ParseDnsAnswer(
      {0x12, 0x34, 0x81, 0x80, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 5, 0, 4, 1, 2, 3, 4},
      1, &records));
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].address, "1.2.3.4");
  EXPECT_EQ(records[0].ttl, 5u);
}

TEST(DnsProviderConfigTest, ServersOrResolvConfAndOrder) {
  auto error = [](const char* json) {
    StatusOr<DnsProviderConfig> c = ParseDnsProviderConfig(nlohmann::json::parse(json));
    return c.ok() ? std::string("ok") : c.status().message();
  };
  EXPECT_EQ(error(R"({})"), "exactly one of \"servers\" and \"resolv_conf\" is required");
  EXPECT_EQ(error(R"({"servers": ["127.0.0.1"], "resolv_conf": "/etc/hosts"})"),
            "exactly one of \"servers\" and \"resolv_conf\" is required");
  EXPECT_EQ(error(R"({"servers": []})"), "servers: must be a non-empty list");
  EXPECT_EQ(error(R"({"servers": ["dns.example:53"]})"),
            "servers[0]: \"dns.example:53\" is not ip, ip:port or [ipv6]:port");
  EXPECT_EQ(error(R"({"servers": ["127.0.0.1:0"]})"),
            "servers[0]: \"127.0.0.1:0\" is not ip, ip:port or [ipv6]:port");
  EXPECT_EQ(error(R"({"servers": ["127.0.0.1:53", "[::1]:5353", "::1", "10.0.0.1"]})"), "ok");
  EXPECT_EQ(error(R"({"resolv_conf": "/nonexistent/resolv.conf"})"),
            "resolv_conf: cannot read \"/nonexistent/resolv.conf\"");
  EXPECT_EQ(error(R"({"resolv_conf": "/etc/hosts"})"), "ok");
  EXPECT_EQ(error(R"({"servers": ["127.0.0.1"], "order": ["SRV", "MX"]})"),
            "order[1]: must be one of last, SRV, A, AAAA, CNAME");
  EXPECT_EQ(error(R"({"servers": ["127.0.0.1"], "order": ["A", "A"]})"),
            "order[1]: \"A\" is listed twice");
  EXPECT_EQ(error(R"({"servers": ["127.0.0.1"], "order": []})"),
            "order: must be a list of 1 to 5 entries");
  StatusOr<DnsProviderConfig> c = ParseDnsProviderConfig(
      nlohmann::json::parse(R"({"servers": ["127.0.0.1"], "order": ["AAAA", "last"]})"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.value().order, (std::vector<DnsType>{DnsType::kAaaa, DnsType::kLast}));
  StatusOr<DnsProviderConfig> d =
      ParseDnsProviderConfig(nlohmann::json::parse(R"({"servers": ["127.0.0.1"]})"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.value().order, (std::vector<DnsType>{DnsType::kLast, DnsType::kSrv, DnsType::kA,
                                                   DnsType::kAaaa, DnsType::kCname}));
}

}  // namespace
}  // namespace turnpike::discovery
