// The consul discovery provider (reference §5.4) against the FAKE Consul agent of
// support/fake_consul.h: nodes as APISIX builds them (passing instances, port 0 -> 80, the
// configured weight, deduped, sort_type), blocking queries that pick up a change at once, a
// server that goes down (last good nodes kept, back-off, recovery), skip_services and the
// "consul" service, default_service, the dump file written and loaded at start, polling with
// keepalive: false, and the config rules of `discovery.consul`.
#include "discovery/consul_provider.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <uv.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "discovery/consul_catalog.h"
#include "discovery/consul_config.h"
#include "discovery/describe.h"
#include "support/fake_consul.h"

namespace turnpike::discovery {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeConsul;

// ---- config ----

TEST(ConsulConfigTest, DefaultsAndTheEffectiveSection) {
  StatusOr<ConsulConfig> c =
      ParseConsulConfig(json::parse(R"({"servers": ["http://127.0.0.1:8500"]})"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c.value().servers.size(), 1u);
  EXPECT_EQ(c.value().servers[0].origin.HostPort(), "127.0.0.1:8500");
  EXPECT_TRUE(c.value().keepalive);
  EXPECT_EQ(c.value().weight, 1);
  EXPECT_EQ(c.value().wait_s, 60);
  EXPECT_EQ(c.value().sort, ConsulSort::kOrigin);
  EXPECT_EQ(c.value().effective, json::parse(R"({
    "servers": ["http://127.0.0.1:8500"], "token": "", "fetch_interval": 3, "keepalive": true,
    "weight": 1, "timeout": {"connect": 2000, "read": 2000, "wait": 60},
    "sort_type": "origin", "shared_size": "64m"})"));
  // Port 80 when absent; IPv6 in brackets; every key.
  c = ParseConsulConfig(json::parse(R"({"servers": ["http://127.0.0.1", "http://[::1]:8500"],
    "token": "t", "fetch_interval": 5, "keepalive": false, "weight": 7,
    "timeout": {"read": 100}, "sort_type": "combine_sort", "skip_services": ["a"],
    "default_service": {"host": "127.0.0.9", "port": 81},
    "dump": {"path": "/tmp/x.json"}, "shared_size": "10m"})"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  const ConsulConfig& v = c.value();
  EXPECT_EQ(v.servers[0].origin.HostPort(), "127.0.0.1:80");
  EXPECT_EQ(v.servers[0].name, "");
  EXPECT_EQ(v.servers[1].origin.HostPort(), "[::1]:8500");
  EXPECT_EQ(v.read_timeout_ms, 100);
  EXPECT_EQ(v.connect_timeout_ms, 2000);
  EXPECT_EQ(v.sort, ConsulSort::kCombineSort);
  EXPECT_EQ(v.default_service, (DiscoveredNode{"127.0.0.9", 81, 7, 0}));
  EXPECT_TRUE(v.has_dump);
  EXPECT_TRUE(v.dump_load_on_init);
  EXPECT_EQ(v.effective["dump"], json::parse(R"({"path": "/tmp/x.json", "load_on_init": true,
    "expire": 0})"));
  EXPECT_EQ(v.effective["default_service"]["metadata"],
            json::parse(R"({"fail_timeout": 1, "weight": 1, "max_fails": 1})"));
}

TEST(ConsulConfigTest, ErrorsNameTheField) {
  struct Case {
    const char* conf;
    const char* error;
  };
  for (const Case& c : {
           Case{R"({})", "property \"servers\" is required"},
           Case{R"({"servers": []})", "servers: must be a non-empty list"},
           Case{R"({"servers": ["https://127.0.0.1:8500"]})", "servers[0]: only http://"},
           Case{R"({"servers": ["http://127.0.0.1:8500/"]})", "servers[0]: invalid consul server"},
           Case{R"({"servers": ["http://127.0.0.1:8500/v1"]})", "servers[0]: invalid consul"},
           Case{R"({"servers": ["http://con sul:8500"]})", "servers[0]: bad host"},
           Case{R"({"servers": ["http://:8500"]})", "servers[0]: no host"},
           Case{R"({"servers": ["http://127.0.0.1:0"]})", "servers[0]: bad port"},
           Case{R"({"servers": ["http://127.0.0.1"], "weight": 0})", "weight: must be >= 1"},
           Case{R"({"servers": ["http://127.0.0.1"], "fetch_interval": 1.5})",
                "fetch_interval: must be an integer"},
           Case{R"({"servers": ["http://127.0.0.1"], "timeout": {"wait": 0}})",
                "timeout.wait: must be >= 1"},
           Case{R"({"servers": ["http://127.0.0.1"], "sort_type": "random"})",
                "sort_type: must be one of origin, host_sort, port_sort, combine_sort"},
           Case{R"({"servers": ["http://127.0.0.1"], "skip_services": []})",
                "skip_services: must be a non-empty list"},
           Case{R"({"servers": ["http://127.0.0.1"], "dump": {"expire": 1}})",
                "dump: property \"path\" is required"},
           Case{R"({"servers": ["http://127.0.0.1"], "dump": {"path": ""}})",
                "dump.path: must be a non-empty string"},
           Case{R"({"servers": ["http://127.0.0.1"], "default_service": {"port": "80"}})",
                "default_service.port: must be an integer"},
           Case{R"({"servers": ["http://127.0.0.1"], "keepalive": "yes"})",
                "keepalive: must be a boolean"},
           Case{R"({"servers": ["http://127.0.0.1"], "shared_size": "64"})", "shared_size:"},
       }) {
    StatusOr<ConsulConfig> r = ParseConsulConfig(json::parse(c.conf));
    ASSERT_FALSE(r.ok()) << c.conf;
    EXPECT_NE(r.status().message().find(c.error), std::string::npos)
        << c.conf << " -> " << r.status().message();
  }
}

// ---- what is read from Consul and the dump ----

TEST(ConsulCatalogTest, HealthAnswersBecomeNodesAsApisixBuildsThem) {
  DiscoveredNodes nodes;
  ASSERT_TRUE(ParseHealthService(R"([
      {"Node": {"Address": "10.9.9.9"}, "Service": {"Address": "10.0.0.2", "Port": 8080}},
      {"Node": {}, "Service": {"Address": "10.0.0.1", "Port": 0}},
      {"Node": {}},
      {"Node": {}, "Service": {"Address": "10.0.0.2", "Port": 8080}},
      {"Node": {}, "Service": {"Address": "10.0.0.1", "Port": 7000}}])",
                                 5, ConsulSort::kOrigin, &nodes));
  // Service.Address (not the node's), port 0 -> 80, the configured weight, deduped, an entry
  // without Service skipped; Consul's order.
  EXPECT_EQ(nodes, (DiscoveredNodes{
                       {"10.0.0.2", 8080, 5, 0}, {"10.0.0.1", 80, 5, 0}, {"10.0.0.1", 7000, 5, 0}}))
      << Describe(nodes);
  DiscoveredNodes sorted = nodes;
  SortConsulNodes(ConsulSort::kHostSort, &sorted);
  EXPECT_EQ(Describe(sorted), "10.0.0.1:80 w5; 10.0.0.1:7000 w5; 10.0.0.2:8080 w5; ");
  sorted = nodes;
  SortConsulNodes(ConsulSort::kPortSort, &sorted);
  EXPECT_EQ(Describe(sorted), "10.0.0.1:80 w5; 10.0.0.1:7000 w5; 10.0.0.2:8080 w5; ");
  sorted = {{"b", 2, 1, 0}, {"a", 9, 1, 0}, {"b", 1, 1, 0}, {"a", 3, 1, 0}};
  DiscoveredNodes by_port = sorted;
  SortConsulNodes(ConsulSort::kCombineSort, &sorted);
  EXPECT_EQ(Describe(sorted), "a:3 w1; a:9 w1; b:1 w1; b:2 w1; ");
  SortConsulNodes(ConsulSort::kPortSort, &by_port);
  EXPECT_EQ(Describe(by_port), "b:1 w1; b:2 w1; a:3 w1; a:9 w1; ");
  // No Address: host "" (the node schema then refuses the list, as APISIX's would fail).
  ASSERT_TRUE(ParseHealthService(R"([{"Service": {"Port": 1}}])", 1, ConsulSort::kOrigin, &nodes));
  EXPECT_EQ(nodes, (DiscoveredNodes{{"", 1, 1, 0}}));
  EXPECT_FALSE(ParseHealthService("{}", 1, ConsulSort::kOrigin, &nodes));
  EXPECT_FALSE(ParseHealthService("[", 1, ConsulSort::kOrigin, &nodes));
  std::vector<std::string> names;
  ASSERT_TRUE(ParseCatalogServices(R"({"web": ["a"], "consul": [], "web": []})", &names));
  EXPECT_EQ(names, (std::vector<std::string>{"consul", "web"}));  // by name, each once
  EXPECT_FALSE(ParseCatalogServices("[]", &names));
  EXPECT_EQ(ParseConsulIndex("42"), 42u);
  EXPECT_FALSE(ParseConsulIndex("0").has_value());
  EXPECT_FALSE(ParseConsulIndex("").has_value());
  EXPECT_FALSE(ParseConsulIndex("-3").has_value());
}

TEST(ConsulCatalogTest, DumpRoundTripsAndExpires) {
  ConsulServices services = {{"web", {{"10.0.0.1", 80, 1, 0}, {"10.0.0.2", 81, 1, 0}}}};
  std::string text = EncodeConsulDump(services, 1000, 0);
  EXPECT_EQ(json::parse(text), json::parse(R"({"services": {"web": [
      {"host": "10.0.0.1", "port": 80, "weight": 1}, {"host": "10.0.0.2", "port": 81,
      "weight": 1}]}, "last_update": 1000, "expire": 0})"));
  StatusOr<ConsulServices> back = DecodeConsulDump(text, 5000, 0);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back.value(), services);
  EXPECT_TRUE(DecodeConsulDump(text, 1010, 10).ok());
  StatusOr<ConsulServices> expired = DecodeConsulDump(text, 1011, 10);
  ASSERT_FALSE(expired.ok());
  EXPECT_NE(expired.status().message().find("expired"), std::string::npos);
  EXPECT_FALSE(DecodeConsulDump("  \n", 0, 0).ok());
  EXPECT_FALSE(DecodeConsulDump("{", 0, 0).ok());
  EXPECT_FALSE(DecodeConsulDump(R"({"services": {}})", 0, 0).ok());
  // A weight that is not an integer >= 0 is kept as -1 (the node schema refuses it).
  StatusOr<ConsulServices> odd = DecodeConsulDump(
      R"({"services": {"a": [{"host": "h", "port": 1, "weight": 1.5}]}, "last_update": 1})", 2, 0);
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(odd.value().at("a"), (DiscoveredNodes{{"h", 1, -1, 0}}));
  // A service written twice: the last list counts (a JSON object's last member); a port may
  // be a numeric string (Lua's tonumber), a weight a whole float.
  StatusOr<ConsulServices> twice = DecodeConsulDump(
      R"({"services": {"a": [{"host": "h1", "port": 1, "weight": 1}],
                       "a": [{"host": "h2", "port": "2", "weight": 2.0}]}, "last_update": 1})",
      2, 0);
  ASSERT_TRUE(twice.ok());
  EXPECT_EQ(twice.value().at("a"), (DiscoveredNodes{{"h2", 2, 2, 0}}));
  EXPECT_FALSE(DecodeConsulDump(R"({"services": [], "last_update": 1})", 2, 0).ok());
  EXPECT_FALSE(DecodeConsulDump(R"({"services": {}, "last_update": "1"})", 2, 0).ok());
}

// ---- the provider against the fake agent ----

class RecordingSink final : public DiscoverySink {
 public:
  void Publish(const ServiceRef& service, DiscoveredNodesConstSharedPtr nodes) override {
    DiscoveredNodes value = nodes != nullptr ? *nodes : DiscoveredNodes{};
    auto it = last.find(service.service_name);
    if (it != last.end() && it->second == value) return;  // the Directory's dedupe
    last[service.service_name] = value;
    published.emplace_back(service.service_name, value);
  }
  std::map<std::string, DiscoveredNodes> last;
  std::vector<std::pair<std::string, DiscoveredNodes>> published;
};

class ConsulProviderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    uv_loop_init(&loop_);
    ASSERT_TRUE(consul_.Start());
    config_.retry_base_ms = 50;
    config_.min_rewatch_ms = 50;
    config_.dump_interval_ms = 0;
    config_.read_timeout_ms = 1000;
    config_.connect_timeout_ms = 1000;
    dump_path_ = ::testing::TempDir() + "consul_dump_" + std::to_string(getpid()) + ".json";
    std::remove(dump_path_.c_str());
  }
  void TearDown() override {
    if (provider_ != nullptr) provider_->Stop();
    uv_run(&loop_, UV_RUN_DEFAULT);
    provider_.reset();
    EXPECT_EQ(uv_loop_close(&loop_), 0);
    std::remove(dump_path_.c_str());
  }

  void StartProvider() {
    ConsulServer server;
    server.url = consul_.url();
    ASSERT_TRUE(http_client::Origin::FromIp("127.0.0.1", consul_.port(), &server.origin));
    config_.servers = {server};
    provider_ = std::make_unique<ConsulProvider>(config_);
    ASSERT_TRUE(provider_->Start(DiscoveryEnvironment{&sink_, &loop_}).ok());
  }
  bool RunUntil(const std::function<bool()>& done, milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      uv_run(&loop_, UV_RUN_NOWAIT);
      usleep(1000);
    }
    return true;
  }
  void RunFor(milliseconds d) {
    RunUntil([] { return false; }, d);
  }
  // Watches `name` and waits until it has been published (any content).
  DiscoveredNodes Watch(const std::string& name) {
    provider_->Watch(ServiceRef{name, {}});
    EXPECT_TRUE(
        RunUntil([&] { return sink_.last.count(name) != 0 && provider_->ready(); }, seconds(5)))
        << name << ": no answer";
    return sink_.last[name];
  }
  bool WaitFor(const std::string& name, const DiscoveredNodes& want, milliseconds limit) {
    return RunUntil(
        [&] {
          auto it = sink_.last.find(name);
          return it != sink_.last.end() && it->second == want;
        },
        limit);
  }
  std::string DumpFile() const {
    std::ifstream in(dump_path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  uv_loop_t loop_{};
  FakeConsul consul_;
  RecordingSink sink_;
  ConsulConfig config_;
  std::unique_ptr<ConsulProvider> provider_;
  std::string dump_path_;
};

TEST_F(ConsulProviderTest, PublishesPassingInstancesWithTheConfiguredWeight) {
  consul_.Register(FakeConsul::Make("web-1", "web", "127.0.0.2", 8080));
  consul_.Register(FakeConsul::Make("web-2", "web", "127.0.0.3", 0));
  consul_.Register(FakeConsul::Make("web-3", "web", "127.0.0.4", 8082));
  consul_.SetStatus("web-3", "critical");
  consul_.SetToken("s3cret");
  config_.token = "s3cret";
  config_.weight = 3;
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  EXPECT_FALSE(provider_->ready());
  DiscoveredNodes nodes = Watch("web");
  EXPECT_EQ(nodes, (DiscoveredNodes{{"127.0.0.2", 8080, 3, 0}, {"127.0.0.3", 80, 3, 0}}))
      << Describe(nodes);
  EXPECT_TRUE(provider_->ready());
  // Every request carried the token; the service was asked for its passing instances.
  for (const FakeConsul::Request& r : consul_.requests()) {
    EXPECT_EQ(r.token, "s3cret") << r.path;
    EXPECT_EQ(r.status, 200) << r.path;
  }
  EXPECT_EQ(consul_.Count("/v1/health/service/web"), 1);
  EXPECT_EQ(consul_.requests()[2].query, "passing=true");
  // A service Consul does not have: no nodes.
  EXPECT_EQ(Watch("nope"), DiscoveredNodes{});
  EXPECT_EQ(consul_.Count("/v1/health/service/nope"), 0) << "not in the catalog: not fetched";
}

TEST_F(ConsulProviderTest, BlockingQueriesPickUpAChangeAtOnce) {
  consul_.Register(FakeConsul::Make("web-1", "web", "127.0.0.2", 80));
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  ASSERT_EQ(Watch("web"), (DiscoveredNodes{{"127.0.0.2", 80, 1, 0}}));
  // Both blocking queries are held by the server.
  ASSERT_TRUE(RunUntil([&] { return consul_.blocked() == 2; }, seconds(5)));
  auto start = std::chrono::steady_clock::now();
  consul_.Register(FakeConsul::Make("web-2", "web", "127.0.0.3", 81));
  ASSERT_TRUE(WaitFor("web", {{"127.0.0.2", 80, 1, 0}, {"127.0.0.3", 81, 1, 0}}, seconds(5)))
      << Describe(sink_.last["web"]);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, milliseconds(1500));
  RecordProperty(
      "change_to_publish_us",
      std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(took).count()));
  // They carried the last index and the wait.
  int blocking = 0;
  for (const FakeConsul::Request& r : consul_.requests()) {
    if (r.params.count("index") == 0) continue;
    ++blocking;
    EXPECT_EQ(r.params.at("wait"), "60s");
    EXPECT_GT(std::stoull(r.params.at("index")), 1u);
  }
  EXPECT_GE(blocking, 1);
  // A check going critical moves only the health index: also picked up.
  ASSERT_TRUE(RunUntil([&] { return consul_.blocked() == 2; }, seconds(5)));
  consul_.SetStatus("web-1", "critical");
  ASSERT_TRUE(WaitFor("web", {{"127.0.0.3", 81, 1, 0}}, seconds(2)));
  // The last instance gone: no nodes (503), as APISIX without a default service.
  consul_.Deregister("web-2");
  ASSERT_TRUE(WaitFor("web", {}, seconds(2)));
}

TEST_F(ConsulProviderTest, AServerDownKeepsTheLastNodesAndBacksOff) {
  consul_.Register(FakeConsul::Make("web-1", "web", "127.0.0.2", 80));
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  ASSERT_EQ(Watch("web"), (DiscoveredNodes{{"127.0.0.2", 80, 1, 0}}));
  ASSERT_TRUE(RunUntil([&] { return consul_.blocked() == 2; }, seconds(5)));
  size_t published = sink_.published.size();
  // Errors answered (500): the change that woke the watches is not taken, the nodes stay.
  consul_.SetFailure(500);
  consul_.Register(FakeConsul::Make("web-2", "web", "127.0.0.3", 80));
  ASSERT_TRUE(RunUntil([&] { return provider_->stats().failures >= 2; }, seconds(3)));
  EXPECT_EQ(sink_.published.size(), published);
  consul_.SetFailure(0);
  ASSERT_TRUE(WaitFor("web", {{"127.0.0.2", 80, 1, 0}, {"127.0.0.3", 80, 1, 0}}, seconds(3)));
  ASSERT_TRUE(RunUntil([&] { return consul_.blocked() == 2; }, seconds(5)));
  // Down: connections refused. Back-offs of 50, 200, 800 ms (the success reset them): a few
  // failures in 1.2 s, nothing published.
  int port = consul_.port();
  published = sink_.published.size();
  uint64_t failures = provider_->stats().failures;
  consul_.Stop();
  RunFor(milliseconds(1200));
  EXPECT_EQ(sink_.published.size(), published);
  EXPECT_EQ(sink_.last["web"], (DiscoveredNodes{{"127.0.0.2", 80, 1, 0}, {"127.0.0.3", 80, 1, 0}}));
  EXPECT_GE(provider_->stats().failures - failures, 2u);
  EXPECT_LE(provider_->stats().failures - failures, 5u) << "backed off";
  // Back: the change is picked up on the next try (the 3.2 s step).
  ASSERT_TRUE(consul_.Start(port));
  consul_.Deregister("web-1");
  ASSERT_TRUE(WaitFor("web", {{"127.0.0.3", 80, 1, 0}}, seconds(8)));
}

TEST_F(ConsulProviderTest, SkippedServicesAndConsulItselfAreNeverFetched) {
  consul_.Register(FakeConsul::Make("skipme", "skipme", "127.0.0.2", 80));
  consul_.Register(FakeConsul::Make("web", "web", "127.0.0.3", 80));
  config_.skip_services = {"skipme"};
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  EXPECT_EQ(Watch("skipme"), DiscoveredNodes{});
  EXPECT_EQ(Watch("consul"), DiscoveredNodes{});
  EXPECT_EQ(Watch("web"), (DiscoveredNodes{{"127.0.0.3", 80, 1, 0}}));
  EXPECT_EQ(consul_.Count("/v1/health/service/skipme"), 0);
  EXPECT_EQ(consul_.Count("/v1/health/service/consul"), 0);
  EXPECT_EQ(consul_.Count("/v1/health/service/web"), 1);
}

TEST_F(ConsulProviderTest, UnknownServicesGetTheDefaultService) {
  consul_.Register(FakeConsul::Make("web-1", "web", "127.0.0.2", 80));
  config_.has_default_service = true;
  config_.weight = 2;
  config_.default_service = DiscoveredNode{"127.0.0.9", 8080, 2, 0};
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  EXPECT_EQ(Watch("nope"), (DiscoveredNodes{{"127.0.0.9", 8080, 2, 0}}));
  EXPECT_EQ(Watch("web"), (DiscoveredNodes{{"127.0.0.2", 80, 2, 0}}));
  // No passing instance left: the service is not listed, so the default service it is.
  consul_.SetStatus("web-1", "critical");
  ASSERT_TRUE(WaitFor("web", {{"127.0.0.9", 8080, 2, 0}}, seconds(3)));
}

TEST_F(ConsulProviderTest, SortTypeOrdersTheNodes) {
  consul_.Register(FakeConsul::Make("a", "web", "127.0.0.3", 81));
  consul_.Register(FakeConsul::Make("b", "web", "127.0.0.2", 82));
  consul_.Register(FakeConsul::Make("c", "web", "127.0.0.2", 80));
  config_.sort = ConsulSort::kCombineSort;
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  DiscoveredNodes nodes = Watch("web");
  EXPECT_EQ(Describe(nodes), "127.0.0.2:80 w1; 127.0.0.2:82 w1; 127.0.0.3:81 w1; ");
}

TEST_F(ConsulProviderTest, TheDumpIsWrittenAndLoadedAtStartWhenConsulIsDown) {
  consul_.Register(FakeConsul::Make("web-1", "web", "127.0.0.2", 80));
  config_.has_dump = true;
  config_.dump_path = dump_path_;
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  ASSERT_EQ(Watch("web"), (DiscoveredNodes{{"127.0.0.2", 80, 1, 0}}));
  ASSERT_TRUE(RunUntil([&] { return !DumpFile().empty(); }, seconds(2)));
  json dump = json::parse(DumpFile());
  EXPECT_EQ(dump["services"], json::parse(R"({"web": [{"host": "127.0.0.2", "port": 80,
    "weight": 1}]})"));
  EXPECT_NEAR(dump["last_update"].get<double>(), static_cast<double>(std::time(nullptr)), 5);
  EXPECT_EQ(dump["expire"], 0);
  EXPECT_EQ(provider_->Dump()["services"], dump["services"]);
  EXPECT_EQ(provider_->Dump()["config"], config_.effective);
  // A restart while Consul is down: the dump's nodes serve, and /status/ready does not wait.
  provider_->Stop();
  uv_run(&loop_, UV_RUN_DEFAULT);
  consul_.Stop();
  sink_ = RecordingSink();
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  provider_->Watch(ServiceRef{"web", {}});
  EXPECT_EQ(sink_.last["web"], (DiscoveredNodes{{"127.0.0.2", 80, 1, 0}})) << "at once";
  ASSERT_TRUE(RunUntil([&] { return provider_->ready(); }, seconds(3)));
  EXPECT_EQ(sink_.last["web"], (DiscoveredNodes{{"127.0.0.2", 80, 1, 0}}));
  // An expired dump is not loaded.
  provider_->Stop();
  uv_run(&loop_, UV_RUN_DEFAULT);
  {
    std::ofstream out(dump_path_);
    out << EncodeConsulDump({{"web", {{"127.0.0.7", 80, 1, 0}}}}, std::time(nullptr) - 100, 10);
  }
  config_.dump_expire_s = 10;
  sink_ = RecordingSink();
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  provider_->Watch(ServiceRef{"web", {}});
  ASSERT_TRUE(RunUntil([&] { return provider_->ready(); }, seconds(3)));
  EXPECT_EQ(sink_.last["web"], DiscoveredNodes{});
}

TEST_F(ConsulProviderTest, KeepaliveFalsePollsEveryFetchInterval) {
  consul_.Register(FakeConsul::Make("web-1", "web", "127.0.0.2", 80));
  config_.keepalive = false;
  config_.fetch_interval_s = 1;
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  ASSERT_EQ(Watch("web"), (DiscoveredNodes{{"127.0.0.2", 80, 1, 0}}));
  RunFor(milliseconds(2300));
  // Two more polls of the indexes; nothing changed, so the service was not fetched again.
  EXPECT_EQ(consul_.Count("/v1/catalog/services"), 3);
  EXPECT_EQ(consul_.Count("/v1/health/service/web"), 1);
  EXPECT_EQ(consul_.blocked(), 0);
  for (const FakeConsul::Request& r : consul_.requests()) {
    EXPECT_EQ(r.params.count("index"), 0u) << r.path << "?" << r.query;
  }
  consul_.Register(FakeConsul::Make("web-2", "web", "127.0.0.3", 80));
  ASSERT_TRUE(WaitFor("web", {{"127.0.0.2", 80, 1, 0}, {"127.0.0.3", 80, 1, 0}}, seconds(3)));
}

TEST_F(ConsulProviderTest, AServiceWatchedLaterIsFetchedWithoutWaitingForAChange) {
  consul_.Register(FakeConsul::Make("web", "web", "127.0.0.2", 80));
  consul_.Register(FakeConsul::Make("api", "api", "127.0.0.3", 80));
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  ASSERT_EQ(Watch("web"), (DiscoveredNodes{{"127.0.0.2", 80, 1, 0}}));
  ASSERT_TRUE(RunUntil([&] { return consul_.blocked() == 2; }, seconds(5)));
  EXPECT_EQ(consul_.Count("/v1/health/service/api"), 0) << "not watched: not fetched";
  auto start = std::chrono::steady_clock::now();
  provider_->Watch(ServiceRef{"api", {}});
  ASSERT_TRUE(WaitFor("api", {{"127.0.0.3", 80, 1, 0}}, seconds(3)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1500));
  // Unwatched, it is dropped from the view by the next round.
  provider_->Unwatch(ServiceRef{"api", {}});
  ASSERT_TRUE(RunUntil([&] { return consul_.blocked() == 2; }, seconds(5)));
  consul_.Register(FakeConsul::Make("web-2", "web", "127.0.0.4", 80));
  ASSERT_TRUE(WaitFor("web", {{"127.0.0.2", 80, 1, 0}, {"127.0.0.4", 80, 1, 0}}, seconds(3)));
  EXPECT_EQ(provider_->Dump()["services"].count("api"), 0u);
}

TEST_F(ConsulProviderTest, AServerGivenByNameIsLookedUp) {
  consul_.Register(FakeConsul::Make("web", "web", "127.0.0.2", 80));
  StatusOr<ConsulConfig> parsed =
      ParseConsulConfig(json{{"servers",
                              {"http://localhost:" + std::to_string(consul_.port()),
                               "http://no-such-host.invalid:8500"}}});
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  config_.servers = parsed.value().servers;
  EXPECT_EQ(config_.servers[0].name, "localhost");
  provider_ = std::make_unique<ConsulProvider>(config_);
  ASSERT_TRUE(provider_->Start(DiscoveryEnvironment{&sink_, &loop_}).ok());
  provider_->Watch(ServiceRef{"web", {}});
  // localhost (the hosts file) answers; the other name fails without holding ready().
  ASSERT_TRUE(
      RunUntil([&] { return provider_->ready() && sink_.last.count("web") != 0; }, seconds(5)));
  ASSERT_TRUE(WaitFor("web", {{"127.0.0.2", 80, 1, 0}}, seconds(5)));
  EXPECT_GE(provider_->stats().failures, 1u);
}

TEST_F(ConsulProviderTest, SeveralServersEachListTheirServices) {
  FakeConsul second;
  ASSERT_TRUE(second.Start());
  consul_.Register(FakeConsul::Make("web", "web", "127.0.0.2", 80));
  second.Register(FakeConsul::Make("api", "api", "127.0.0.3", 81));
  ConsulServer a, b;
  a.url = consul_.url();
  b.url = second.url();
  ASSERT_TRUE(http_client::Origin::FromIp("127.0.0.1", consul_.port(), &a.origin));
  ASSERT_TRUE(http_client::Origin::FromIp("127.0.0.1", second.port(), &b.origin));
  config_.servers = {a, b};
  provider_ = std::make_unique<ConsulProvider>(config_);
  ASSERT_TRUE(provider_->Start(DiscoveryEnvironment{&sink_, &loop_}).ok());
  provider_->Watch(ServiceRef{"web", {}});
  provider_->Watch(ServiceRef{"api", {}});
  ASSERT_TRUE(RunUntil([&] { return provider_->ready(); }, seconds(5)));
  EXPECT_EQ(sink_.last["web"], (DiscoveredNodes{{"127.0.0.2", 80, 1, 0}}));
  EXPECT_EQ(sink_.last["api"], (DiscoveredNodes{{"127.0.0.3", 81, 1, 0}}));
  // Each server's changes reach its services only.
  ASSERT_TRUE(
      RunUntil([&] { return consul_.blocked() == 2 && second.blocked() == 2; }, seconds(5)));
  second.Register(FakeConsul::Make("api-2", "api", "127.0.0.4", 81));
  ASSERT_TRUE(WaitFor("api", {{"127.0.0.3", 81, 1, 0}, {"127.0.0.4", 81, 1, 0}}, seconds(3)));
  EXPECT_EQ(sink_.last["web"], (DiscoveredNodes{{"127.0.0.2", 80, 1, 0}}));
  EXPECT_EQ(consul_.Count("/v1/health/service/web"), 1);
  provider_->Stop();
  uv_run(&loop_, UV_RUN_DEFAULT);
}

}  // namespace
}  // namespace turnpike::discovery
