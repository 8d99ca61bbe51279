// Upstreams discovered by Nacos (apisix-behaviour.md §3.5, §5.3) through the daemon, against a FAKE
// Nacos server (support/fake_nacos.h: python3 following the Nacos v1 API; Nacos itself is not
// installable here) that requires a login. Registered instances are served once ready, a change is
// followed within a fetch_interval, an emptied service answers 503 and comes back, the registry
// going away keeps the last nodes, discovery_args pick namespace and group, reloads start and stop
// polling the services they add and remove, bad credentials give 503 without holding readiness, and
// a bad `discovery.nacos` section stops the daemon.

#include <chrono>
#include <map>
#include <string>
#include <thread>

#include "integration/discovery_fixture.h"
#include "support/fake_nacos.h"

namespace turnpike::itest {
namespace {

using std::chrono::seconds;
using testing::FakeNacos;

class DiscoveryNacosTest : public DiscoveryTest {
 protected:
  void SetUp() override {
    if (!FakeNacos::Available()) GTEST_SKIP() << "python3 is not installed";
    ASSERT_NO_FATAL_FAILURE(DiscoveryTest::SetUp());
    FakeNacos::Options options;
    options.auth = "nacos:s3cret";
    ASSERT_TRUE(nacos_.Start(options)) << nacos_.error();
  }

  static nlohmann::json At(const Backend* b, double weight = 1.0) {
    return {{"ip", "127.0.0.1"}, {"port", b->port()}, {"weight", weight}};
  }

  static std::string Routes() {
    return R"yaml(
routes:
  - uri: /status/*
    upstream_id: web
  - uri: /dev/*
    plugins:
      proxy-rewrite: {regex_uri: ["^/dev/(.*)", "/$1"]}
    upstream:
      discovery_type: nacos
      service_name: web
      discovery_args: {namespace_id: dev, group_name: G1}
upstreams:
  - id: web
    discovery_type: nacos
    service_name: web
#END
)yaml";
  }

  // `extra` is the whole nacos section (Section() with the credentials of the test).
  std::string Discovery(const std::string& extra) const override { return extra; }
  std::string Section(const std::string& credentials = "nacos:s3cret") const {
    return "  nacos:\n    host:\n      - \"http://" + credentials +
           "@127.0.0.1:" + std::to_string(nacos_.port()) + "\"\n    fetch_interval: 1\n";
  }

  using DiscoveryTest::StartReady;
  void StartReady(const std::string& section) { StartReady(Routes(), Options(section)); }
  // Polls until 4 requests to `path` spread as `want` (a request that fails counts as "").
  bool SpreadBecomes(const std::string& path, const Spreads& want) {
    return Until(path, want, 4).has_value();
  }

  FakeNacos nacos_;
};

TEST_F(DiscoveryNacosTest, ServesRegisteredInstancesAndFollowsTheirChanges) {
  ASSERT_TRUE(nacos_.SetInstances("web", {At(a_.get()), At(b_.get())}));
  ASSERT_NO_FATAL_FAILURE(StartReady(Section()));
  EXPECT_EQ(Spread("/status/200", 10), (Spreads{{"A", 5}, {"B", 5}}));
  // Weights as Nacos gives them (floats with integral values).
  ASSERT_TRUE(nacos_.SetInstances("web", {At(a_.get(), 3.0), At(b_.get(), 1.0)}));
  EXPECT_TRUE(SpreadBecomes("/status/200", {{"A", 3}, {"B", 1}}));
  ASSERT_TRUE(nacos_.SetInstances("web", {At(b_.get())}));
  EXPECT_TRUE(SpreadBecomes("/status/200", {{"B", 4}}));
  // Nacos lists no instance: no nodes, 503 as APISIX; then back.
  ASSERT_TRUE(nacos_.SetInstances("web", {}));
  ASSERT_TRUE(PollUntil([&] { return Get(gw_.port(), "/status/200").status == 503; }, seconds(10)));
  ExpectJsonError(Get(gw_.port(), "/status/200"));
  ASSERT_TRUE(nacos_.SetInstances("web", {At(a_.get())}));
  EXPECT_TRUE(SpreadBecomes("/status/200", {{"A", 4}}));
  // The daemon logged in once (tokenTtl 18000 s) and sent its token with every poll.
  std::vector<nlohmann::json> log = nacos_.Log();
  int logins = 0, lists = 0;
  for (const nlohmann::json& r : log) {
    if (r["path"] == "/nacos/v1/auth/login") ++logins;
    if (r["path"] == "/nacos/v1/ns/instance/list") {
      ++lists;
      EXPECT_TRUE(r["query"].contains("accessToken")) << r.dump();
    }
  }
  EXPECT_EQ(logins, 1);
  EXPECT_GE(lists, 4);
}

TEST_F(DiscoveryNacosTest, DiscoveryArgsPickTheNamespaceAndGroup) {
  ASSERT_TRUE(nacos_.SetInstances("web", {At(a_.get())}));
  ASSERT_TRUE(nacos_.SetInstances("web", {At(b_.get())}, "dev", "G1"));
  ASSERT_NO_FATAL_FAILURE(StartReady(Section()));
  EXPECT_EQ(Spread("/status/200", 3), (Spreads{{"A", 3}}));
  EXPECT_EQ(Spread("/dev/status/200", 3), (Spreads{{"B", 3}}));
}

TEST_F(DiscoveryNacosTest, TheRegistryGoneKeepsTheLastNodes) {
  ASSERT_TRUE(nacos_.SetInstances("web", {At(a_.get()), At(b_.get())}));
  ASSERT_NO_FATAL_FAILURE(StartReady(Section()));
  EXPECT_EQ(Spread("/status/200", 4).size(), 2u);
  nacos_.Kill();
  ASSERT_NO_FATAL_FAILURE(
      KeepsServing("/status/200", {{"A", 1}, {"B", 1}}, seconds(4)));  // several fetch intervals
  EXPECT_NE(gw_.Stderr().find("keeping its last nodes"), std::string::npos) << gw_.Stderr();
  // Back, registered anew (a restarted registry): followed again.
  FakeNacos::Options options;
  options.auth = "nacos:s3cret";
  ASSERT_TRUE(nacos_.Start(options)) << nacos_.error();
  ASSERT_TRUE(nacos_.SetInstances("web", {At(b_.get())}));
  EXPECT_TRUE(SpreadBecomes("/status/200", {{"B", 4}}));
}

TEST_F(DiscoveryNacosTest, ReloadsStartAndStopPollingServices) {
  ASSERT_TRUE(nacos_.SetInstances("web", {At(a_.get())}));
  ASSERT_TRUE(nacos_.SetInstances("other", {At(b_.get())}));
  ASSERT_NO_FATAL_FAILURE(StartReady(Section()));
  auto asked = [&](const std::string& service) {
    int n = 0;
    for (const nlohmann::json& r : nacos_.Log()) {
      if (r["path"] == "/nacos/v1/ns/instance/list" && r["query"]["serviceName"] == service) ++n;
    }
    return n;
  };
  EXPECT_EQ(asked("other"), 0);  // no upstream names it: never fetched
  // A reload adds a route to "other": fetched at once and served; "web" served throughout.
  std::string with_other = Routes();
  with_other.insert(with_other.find("upstreams:"),
                    "  - uri: /other/*\n    plugins:\n      proxy-rewrite: {regex_uri: "
                    "[\"^/other/(.*)\", \"/$1\"]}\n    upstream: {discovery_type: nacos, "
                    "service_name: other}\n");
  ASSERT_TRUE(gw_.RewriteRoutes(with_other));
  ASSERT_TRUE(gw_.Reload());
  EXPECT_TRUE(SpreadBecomes("/other/status/200", {{"B", 4}}));
  EXPECT_EQ(BackendOf(Get(gw_.port(), "/status/200")), "A");
  // A reload without it: its polling stops.
  ASSERT_TRUE(gw_.RewriteRoutes(Routes()));
  ASSERT_TRUE(gw_.Reload());
  ASSERT_TRUE(
      PollUntil([&] { return Get(gw_.port(), "/other/status/200").status == 404; }, seconds(10)));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // a poll in flight ends
  int before = asked("other");
  EXPECT_GT(before, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // two more fetch intervals
  EXPECT_EQ(asked("other"), before);
  EXPECT_EQ(BackendOf(Get(gw_.port(), "/status/200")), "A");
}

TEST_F(DiscoveryNacosTest, BadCredentialsGive503WithoutHoldingReadiness) {
  ASSERT_TRUE(nacos_.SetInstances("web", {At(a_.get())}));
  ASSERT_NO_FATAL_FAILURE(StartReady(Section("nacos:wrong")));
  HttpResponse r = Get(gw_.port(), "/status/200");
  EXPECT_EQ(r.status, 503) << r.DebugString();
  EXPECT_NE(gw_.Stderr().find("login failed: status 403"), std::string::npos) << gw_.Stderr();
}

TEST_F(DiscoveryNacosTest, BadNacosSectionsStopTheDaemon) {
  ExpectBadSectionsStopTheDaemon(
      Routes(), {
                    {"  nacos: {}\n", "discovery.nacos: host: is required"},
                    {"  nacos:\n    host: [\"tcp://127.0.0.1:8848\"]\n",
                     "discovery.nacos: host[0]: \"tcp://127.0.0.1:8848\" is not"},
                    {"  nacos:\n    host: [\"http://127.0.0.1:8848\"]\n    fetch_interval: 0\n",
                     "discovery.nacos: fetch_interval: must be an integer >= 1"},
                    {"  nacos:\n    host: [\"http://127.0.0.1:8848\"]\n    hosts: []\n",
                     "discovery.nacos: unknown field \"hosts\""},
                });
}

}  // namespace
}  // namespace turnpike::itest
