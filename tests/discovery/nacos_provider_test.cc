// The nacos discovery provider against a FAKE Nacos server (support/fake_nacos.h: python3 on
// 127.0.0.1 following the Nacos v1 API; Nacos itself is not installable here): defaults and
// discovery_args in the query, weights, polling only watched services, unchanged answers not parsed
// again, an empty list, a registry down (last good kept), hosts tried from a random one, login with
// token reuse and re-login after a 403, slow answers, bad answers, signing, and a host given by
// name.
#include "discovery/nacos_provider.h"

#include <gtest/gtest.h>
#include <uv.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "discovery/nacos_api.h"
#include "discovery/describe.h"
#include "support/fake_nacos.h"
#include "support/net.h"
#include "support/uv_loop.h"

namespace turnpike::discovery {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeNacos;
using testing::RunLoopUntil;

class RecordingSink final : public DiscoverySink {
 public:
  void Publish(const ServiceRef& service, DiscoveredNodesConstSharedPtr nodes) override {
    published.emplace_back(service, nodes != nullptr ? *nodes : DiscoveredNodes{});
  }
  // The last list published for `service`, or nullopt.
  std::optional<DiscoveredNodes> Last(const ServiceRef& service) const {
    for (auto it = published.rbegin(); it != published.rend(); ++it) {
      if (it->first == service) return it->second;
    }
    return std::nullopt;
  }
  std::vector<std::pair<ServiceRef, DiscoveredNodes>> published;
};

nlohmann::json Instance(const std::string& ip, int port, nlohmann::json weight = 1.0) {
  // A null weight: the fake leaves the field out (Nacos always writes one).
  return {{"ip", ip}, {"port", port}, {"weight", weight}};
}

ServiceRef Ref(const std::string& name, std::map<std::string, std::string> args = {}) {
  return ServiceRef{name, std::move(args)};
}

// The Nacos API requests in the fake's log whose path ends with `op`.
std::vector<nlohmann::json> Requests(FakeNacos& nacos, const std::string& op) {
  std::vector<nlohmann::json> out;
  for (const nlohmann::json& r : nacos.Log()) {
    std::string path = r["path"];
    if (path.size() >= op.size() && path.compare(path.size() - op.size(), op.size(), op) == 0) {
      out.push_back(r);
    }
  }
  return out;
}

class NacosProviderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!FakeNacos::Available()) GTEST_SKIP() << "python3 is not installed";
    uv_loop_init(&loop_);
    config_.fetch_interval_ms = 200;
    config_.connect_timeout = 0.5;
    config_.read_timeout = 0.5;
  }
  void TearDown() override {
    if (!FakeNacos::Available()) return;
    if (provider_ != nullptr) provider_->Stop();
    uv_run(&loop_, UV_RUN_DEFAULT);
    provider_.reset();
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }

  static NacosHost HostOf(int port, const std::string& user = "", const std::string& pass = "") {
    NacosHost h;
    h.host = "127.0.0.1";
    h.port = port;
    h.url = "http://127.0.0.1:" + std::to_string(port);
    h.username = user;
    h.password = pass;
    return h;
  }
  void StartProvider() {
    if (config_.hosts.empty()) config_.hosts = {HostOf(nacos_.port())};
    provider_ = std::make_unique<NacosProvider>(config_);
    ASSERT_TRUE(provider_->Start(DiscoveryEnvironment{&sink_, &loop_}).ok());
  }
  // Runs the loop until `done`; a 10 ms tick makes each pass return even when the provider
  // waits for nothing (no service watched).
  bool RunUntil(const std::function<bool()>& done, milliseconds limit) {
    return RunLoopUntil(&loop_, done, limit, milliseconds(10));
  }
  void RunFor(milliseconds d) {
    RunUntil([] { return false; }, d);
  }
  // Watches `ref` and waits for its first answer.
  std::optional<DiscoveredNodes> First(const ServiceRef& ref) {
    provider_->Watch(ref);
    EXPECT_TRUE(RunUntil([&] { return sink_.Last(ref).has_value(); }, seconds(5)))
        << ref.service_name << ": no answer";
    return sink_.Last(ref);
  }
  // Waits until the last list published for `ref` is `want`.
  bool WaitFor(const ServiceRef& ref, const DiscoveredNodes& want,
               milliseconds limit = seconds(5)) {
    return RunUntil([&] { return sink_.Last(ref) == want; }, limit);
  }

  uv_loop_t loop_{};
  FakeNacos nacos_;
  RecordingSink sink_;
  NacosProviderConfig config_;
  std::unique_ptr<NacosProvider> provider_;
};

TEST_F(NacosProviderTest, ListsAWatchedServiceWithApisixDefaultsAndWeights) {
  ASSERT_TRUE(nacos_.Start()) << nacos_.error();
  ASSERT_TRUE(
      nacos_.SetInstances("web", {Instance("127.0.0.2", 8080, 2.0),
                                  Instance("127.0.0.3", 8081, nullptr),
                                  {{"ip", "127.0.0.4"}, {"port", 8082}, {"healthy", false}},
                                  {{"ip", "127.0.0.5"}, {"port", 8083}, {"enabled", false}}}))
      << nacos_.error();
  config_.weight = 7;
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  EXPECT_TRUE(provider_->ready());  // nothing watched yet
  provider_->Watch(Ref("web"));
  EXPECT_FALSE(provider_->ready());
  ASSERT_TRUE(WaitFor(Ref("web"), {{"127.0.0.2", 8080, 2, 0}, {"127.0.0.3", 8081, 7, 0}}))
      << Describe(sink_.Last(Ref("web")));
  EXPECT_TRUE(provider_->ready());
  std::vector<nlohmann::json> lists = Requests(nacos_, "ns/instance/list");
  ASSERT_FALSE(lists.empty());
  EXPECT_EQ(lists[0]["path"], "/nacos/v1/ns/instance/list");
  EXPECT_EQ(lists[0]["query"], (nlohmann::json{{"healthyOnly", "true"},
                                               {"serviceName", "web"},
                                               {"namespaceId", "public"},
                                               {"groupName", "DEFAULT_GROUP"}}));
  EXPECT_TRUE(Requests(nacos_, "auth/login").empty());
}

TEST_F(NacosProviderTest, DiscoveryArgsPickNamespaceAndGroupAndSpellingsShareAFetch) {
  ASSERT_TRUE(nacos_.Start()) << nacos_.error();
  ASSERT_TRUE(nacos_.SetInstances("svc", {Instance("127.0.0.2", 1)}));
  ASSERT_TRUE(nacos_.SetInstances("svc", {Instance("127.0.0.3", 2)}, "dev", "G1"));
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  ServiceRef plain = Ref("svc");
  ServiceRef spelled = Ref("svc", {{"namespace_id", "public"}, {"group_name", "DEFAULT_GROUP"}});
  ServiceRef dev = Ref("svc", {{"namespace_id", "dev"}, {"group_name", "G1"}});
  ServiceRef dev_default_group = Ref("svc", {{"namespace_id", "dev"}});
  provider_->Watch(plain);
  provider_->Watch(spelled);
  provider_->Watch(dev);
  provider_->Watch(dev_default_group);
  ASSERT_TRUE(WaitFor(plain, {{"127.0.0.2", 1, 1, 0}}));
  ASSERT_TRUE(WaitFor(spelled, {{"127.0.0.2", 1, 1, 0}}));
  ASSERT_TRUE(WaitFor(dev, {{"127.0.0.3", 2, 1, 0}}));
  ASSERT_TRUE(WaitFor(dev_default_group, {}));
  // The control API's dump (APISIX's dump_data shape): namespace / group / service.
  nlohmann::json dump = provider_->Dump();
  EXPECT_EQ(dump["services"]["public"]["DEFAULT_GROUP"]["svc"],
            nlohmann::json::array({{{"host", "127.0.0.2"}, {"port", 1}, {"weight", 1}}}));
  EXPECT_EQ(dump["services"]["dev"]["G1"]["svc"],
            nlohmann::json::array({{{"host", "127.0.0.3"}, {"port", 2}, {"weight", 1}}}));
  EXPECT_EQ(dump["services"]["dev"]["DEFAULT_GROUP"]["svc"], nlohmann::json::array());
  EXPECT_EQ(dump["config"]["host"],
            nlohmann::json::array({"http://127.0.0.1:" + std::to_string(nacos_.port())}));
  EXPECT_EQ(dump["config"]["fetch_interval"], 0);  // the test's 200 ms
  // One round: three distinct Nacos services, one request each.
  std::vector<nlohmann::json> lists = Requests(nacos_, "ns/instance/list");
  std::set<std::string> asked;
  for (const nlohmann::json& r : lists) {
    asked.insert(r["query"]["namespaceId"].get<std::string>() + "/" +
                 r["query"]["groupName"].get<std::string>());
  }
  EXPECT_EQ(asked, (std::set<std::string>{"public/DEFAULT_GROUP", "dev/G1", "dev/DEFAULT_GROUP"}));
  EXPECT_EQ(lists.size(), 3u);
}

TEST_F(NacosProviderTest, PollsEveryIntervalParsesOnlyChangesAndStopsAfterUnwatch) {
  ASSERT_TRUE(nacos_.Start()) << nacos_.error();
  ASSERT_TRUE(nacos_.SetInstances("web", {Instance("127.0.0.2", 1)}));
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  ASSERT_TRUE(First(Ref("web")).has_value());
  RunFor(milliseconds(700));  // ~3 more rounds, same content (lastRefTime differs)
  EXPECT_GE(provider_->stats().rounds, 3u);
  EXPECT_GE(provider_->stats().unchanged, 2u);
  EXPECT_EQ(provider_->stats().parsed, 1u);
  // A change is picked up on the next round.
  ASSERT_TRUE(nacos_.SetInstances("web", {Instance("127.0.0.2", 1), Instance("127.0.0.3", 2, 3)}));
  ASSERT_TRUE(WaitFor(Ref("web"), {{"127.0.0.2", 1, 1, 0}, {"127.0.0.3", 2, 3, 0}}, seconds(2)));
  // The registry empties the service: no nodes (503 upstream side).
  ASSERT_TRUE(nacos_.SetInstances("web", {}));
  ASSERT_TRUE(WaitFor(Ref("web"), {}, seconds(2)));
  // Unwatched: never asked again.
  provider_->Unwatch(Ref("web"));
  RunFor(milliseconds(300));
  ASSERT_TRUE(nacos_.ClearLog());
  RunFor(milliseconds(600));
  EXPECT_TRUE(Requests(nacos_, "ns/instance/list").empty());
}

TEST_F(NacosProviderTest, TheSameInstancesWrittenDifferentlyAreParsedAgain) {
  ASSERT_TRUE(nacos_.Start()) << nacos_.error();
  // Two spellings of one instance list: the hosts text differs, the nodes do not.
  ASSERT_TRUE(nacos_.SetBehaviour(
      {{"bodies",
        {R"({"hosts":[{"ip":"127.0.0.2","port":1,"weight":1.0}],"lastRefTime":1})",
         R"({"hosts":[{"port":1,"ip":"127.0.0.2","weight":1}],"lastRefTime":2})"}}}));
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  ASSERT_EQ(First(Ref("web")), (DiscoveredNodes{{"127.0.0.2", 1, 1, 0}}));
  RunFor(milliseconds(700));
  // Every answer parsed and published (the sink, the Directory in the daemon, drops equal lists).
  EXPECT_GE(provider_->stats().parsed, 3u);
  EXPECT_EQ(provider_->stats().unchanged, 0u);
  EXPECT_EQ(sink_.published.size(), provider_->stats().parsed);
}

TEST_F(NacosProviderTest, ARegistryDownKeepsTheLastNodesAndANeverAnsweredServiceGetsNone) {
  ASSERT_TRUE(nacos_.Start()) << nacos_.error();
  ASSERT_TRUE(nacos_.SetInstances("web", {Instance("127.0.0.2", 1)}));
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  ASSERT_TRUE(First(Ref("web")).has_value());
  size_t published = sink_.published.size();
  nacos_.Kill();
  RunFor(milliseconds(800));
  EXPECT_EQ(sink_.published.size(),
            published);  // nothing new: the last nodes stay
  EXPECT_GE(provider_->stats().failures, 2u);
  // A service watched while the registry is down: answered empty once, so ready() holds.
  provider_->Watch(Ref("other"));
  ASSERT_TRUE(RunUntil([&] { return sink_.Last(Ref("other")).has_value(); }, seconds(5)));
  EXPECT_EQ(*sink_.Last(Ref("other")), DiscoveredNodes{});
  EXPECT_TRUE(provider_->ready());
  // Back (empty registry state, as a restarted one): answers flow again.
  ASSERT_TRUE(nacos_.Start()) << nacos_.error();
  ASSERT_TRUE(nacos_.SetInstances("web", {Instance("127.0.0.9", 9)}));
  ASSERT_TRUE(WaitFor(Ref("web"), {{"127.0.0.9", 9, 1, 0}}));
}

TEST_F(NacosProviderTest, HostsAreTriedFromARandomOneUntilOneAnswers) {
  ASSERT_TRUE(nacos_.Start()) << nacos_.error();
  ASSERT_TRUE(nacos_.SetInstances("web", {Instance("127.0.0.2", 1)}));
  int dead = testing::FreePort();
  config_.hosts = {HostOf(dead), HostOf(nacos_.port()), HostOf(dead)};
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  provider_->SeedForTest(1);
  ASSERT_TRUE(First(Ref("web")).has_value());
  RunFor(milliseconds(1200));
  // Every round ended with the answer of the live host, whichever host it started from.
  uint64_t rounds = provider_->stats().rounds;
  EXPECT_GE(rounds, 4u);
  // (The last round may still be in flight.)
  EXPECT_GE(provider_->stats().unchanged + provider_->stats().parsed + 1, rounds);
  EXPECT_GT(provider_->stats().failures,
            0u);  // some rounds started on a dead host
  EXPECT_EQ(*sink_.Last(Ref("web")), (DiscoveredNodes{{"127.0.0.2", 1, 1, 0}}));
}

TEST_F(NacosProviderTest, LogsInReusesTheTokenAndLogsInAgainAfterA403) {
  FakeNacos::Options options;
  options.auth = "nacos:s3cret";
  ASSERT_TRUE(nacos_.Start(options)) << nacos_.error();
  ASSERT_TRUE(nacos_.SetInstances("web", {Instance("127.0.0.2", 1)}));
  config_.hosts = {HostOf(nacos_.port(), "nacos", "s3cret")};
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  ASSERT_EQ(First(Ref("web")), (DiscoveredNodes{{"127.0.0.2", 1, 1, 0}}));
  RunFor(milliseconds(600));
  std::vector<nlohmann::json> logins = Requests(nacos_, "auth/login");
  ASSERT_EQ(logins.size(), 1u);  // tokenTtl 18000 s: one login for many rounds
  EXPECT_EQ(logins[0]["method"], "POST");
  EXPECT_EQ(logins[0]["query"], (nlohmann::json{{"username", "nacos"}, {"password", "s3cret"}}));
  std::vector<nlohmann::json> lists = Requests(nacos_, "ns/instance/list");
  ASSERT_FALSE(lists.empty());
  EXPECT_TRUE(lists.back()["query"].contains("accessToken"));
  // The registry forgets its tokens: a 403, one new login, the same round goes on.
  ASSERT_TRUE(nacos_.SetBehaviour({{"expire_tokens", true}}));
  ASSERT_TRUE(nacos_.SetInstances("web", {Instance("127.0.0.3", 1)}));
  ASSERT_TRUE(WaitFor(Ref("web"), {{"127.0.0.3", 1, 1, 0}}));
  EXPECT_EQ(Requests(nacos_, "auth/login").size(), 2u);
  EXPECT_EQ(provider_->stats().failures, 0u);
}

TEST_F(NacosProviderTest, AShortTokenTtlIsRenewedBeforeItEnds) {
  FakeNacos::Options options;
  options.auth = "nacos:s3cret";
  options.token_ttl = 1;  // renewed after 0.9 s
  ASSERT_TRUE(nacos_.Start(options)) << nacos_.error();
  ASSERT_TRUE(nacos_.SetInstances("web", {Instance("127.0.0.2", 1)}));
  config_.hosts = {HostOf(nacos_.port(), "nacos", "s3cret")};
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  ASSERT_TRUE(First(Ref("web")).has_value());
  RunFor(milliseconds(2100));
  size_t logins = Requests(nacos_, "auth/login").size();
  EXPECT_GE(logins, 2u);
  EXPECT_LE(logins, 4u);
  EXPECT_EQ(provider_->stats().failures, 0u);
}

TEST_F(NacosProviderTest, BadCredentialsFailTheHostAndTheServiceGetsNoNodes) {
  FakeNacos::Options options;
  options.auth = "nacos:s3cret";
  ASSERT_TRUE(nacos_.Start(options)) << nacos_.error();
  ASSERT_TRUE(nacos_.SetInstances("web", {Instance("127.0.0.2", 1)}));
  config_.hosts = {HostOf(nacos_.port(), "nacos", "wrong")};
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  ASSERT_EQ(First(Ref("web")), DiscoveredNodes{});
  EXPECT_TRUE(Requests(nacos_, "ns/instance/list").empty());
  // Without credentials at all: the list request itself is refused (403), no nodes.
  sink_.published.clear();
  provider_->Stop();
  uv_run(&loop_, UV_RUN_DEFAULT);
  config_.hosts = {HostOf(nacos_.port())};
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  ASSERT_EQ(First(Ref("web")), DiscoveredNodes{});
  EXPECT_EQ(provider_->stats().failures, 1u);
}

TEST_F(NacosProviderTest, SlowAndBadAnswersKeepTheLastNodes) {
  ASSERT_TRUE(nacos_.Start()) << nacos_.error();
  ASSERT_TRUE(nacos_.SetInstances("web", {Instance("127.0.0.2", 1)}));
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  ASSERT_TRUE(First(Ref("web")).has_value());
  size_t published = sink_.published.size();
  for (nlohmann::json behaviour :
       {nlohmann::json{{"delay_ms", 800}},  // over the 0.5 s read
        nlohmann::json{{"status", 500}}, nlohmann::json{{"body", "<html>busy</html>"}},
        nlohmann::json{{"body", R"({"hosts":[1]})"}}}) {
    ASSERT_TRUE(nacos_.SetBehaviour(behaviour));
    uint64_t failures = provider_->stats().failures;
    ASSERT_TRUE(RunUntil([&] { return provider_->stats().failures > failures; }, seconds(3)))
        << behaviour.dump();
  }
  EXPECT_EQ(sink_.published.size(), published);
  // A weight Nacos may send that is not an integer: passed on as -1 (the list is invalid, 503).
  ASSERT_TRUE(nacos_.SetBehaviour(nlohmann::json::object()));
  ASSERT_TRUE(nacos_.SetInstances("web", {Instance("127.0.0.2", 1, 0.5)}));
  ASSERT_TRUE(WaitFor(Ref("web"), {{"127.0.0.2", 1, -1, 0}}));
}

TEST_F(NacosProviderTest, AccessKeyAndSecretKeySignEachListRequest) {
  ASSERT_TRUE(nacos_.Start()) << nacos_.error();
  config_.access_key = "my-ak";
  config_.secret_key = "my-sk";
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  ASSERT_TRUE(First(Ref("web", {{"group_name", "G"}})).has_value());
  std::vector<nlohmann::json> lists = Requests(nacos_, "ns/instance/list");
  ASSERT_FALSE(lists.empty());
  const nlohmann::json& q = lists[0]["query"];
  EXPECT_EQ(q["ak"], "my-ak");
  std::string data = q["data"];
  EXPECT_NE(data.find("@@G@@web"), std::string::npos) << data;
  EXPECT_EQ(q["signature"], NacosSignature("my-sk", data));
}

TEST_F(NacosProviderTest, AHostGivenByNameIsLookedUp) {
  ASSERT_TRUE(nacos_.Start()) << nacos_.error();
  ASSERT_TRUE(nacos_.SetInstances("web", {Instance("127.0.0.2", 1)}));
  NacosHost h = HostOf(nacos_.port());
  h.host = "localhost";  // /etc/hosts, read by c-ares
  config_.hosts = {h};
  ASSERT_NO_FATAL_FAILURE(StartProvider());
  EXPECT_EQ(First(Ref("web")), (DiscoveredNodes{{"127.0.0.2", 1, 1, 0}}));
}

}  // namespace
}  // namespace turnpike::discovery
