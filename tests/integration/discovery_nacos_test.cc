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

#include "integration/itest.h"
#include "support/fake_nacos.h"

namespace turnpike::itest {
namespace {

using std::chrono::seconds;
using testing::FakeNacos;

class DiscoveryNacosTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    a_ = StartBackend(kBackendBin, "A");
    b_ = StartBackend(kBackendBin, "B");
  }
  static void TearDownTestSuite() {
    a_.reset();
    b_.reset();
  }
  void SetUp() override {
    if (!FakeNacos::Available()) GTEST_SKIP() << "python3 is not installed";
    ASSERT_NE(a_, nullptr);
    ASSERT_NE(b_, nullptr);
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

  TurnpikeOptions Options(const std::string& nacos_section) {
    status_port_ = FreePort();
    TurnpikeOptions options;
    options.worker_processes = 1;  // one round robin: exact spreads
    options.apisix_extra =
        "  status:\n    ip: 127.0.0.1\n    port: " + std::to_string(status_port_) + "\n";
    options.top_extra = "discovery:\n" + nacos_section;
    return options;
  }
  std::string Section(const std::string& credentials = "nacos:s3cret") const {
    return "  nacos:\n    host:\n      - \"http://" + credentials +
           "@127.0.0.1:" + std::to_string(nacos_.port()) + "\"\n    fetch_interval: 1\n";
  }

  void StartReady(const std::string& section) {
    ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, Routes(), Options(section)));
    ASSERT_TRUE(WaitForPort(status_port_, seconds(5)));
    ASSERT_TRUE(
        PollUntil([&] { return Get(status_port_, "/status/ready").status == 200; }, seconds(10)))
        << Get(status_port_, "/status/ready").DebugString();
  }

  // Which backends answered `n` requests to `path` (all must be 200).
  std::map<std::string, int> Spread(const std::string& path, int n) {
    std::map<std::string, int> seen;
    for (int i = 0; i < n; ++i) {
      HttpResponse r = Get(gw_.port(), path);
      EXPECT_EQ(r.status, 200) << path << " request " << i << "\n" << r.DebugString();
      ++seen[BackendOf(r)];
    }
    return seen;
  }
  // Polls until 4 requests to `path` spread as `want` (a request that fails counts as "").
  bool SpreadBecomes(const std::string& path, const std::map<std::string, int>& want) {
    return PollUntil(
        [&] {
          std::map<std::string, int> seen;
          for (int i = 0; i < 4; ++i) {
            HttpResponse r = Get(gw_.port(), path);
            ++seen[r.status == 200 ? BackendOf(r) : ""];
          }
          return seen == want;
        },
        seconds(10));
  }

  static inline std::unique_ptr<Backend> a_;
  static inline std::unique_ptr<Backend> b_;
  FakeNacos nacos_;
  Turnpike gw_{kTurnpikeBin};
  int status_port_ = 0;
};

TEST_F(DiscoveryNacosTest, ServesRegisteredInstancesAndFollowsTheirChanges) {
  ASSERT_TRUE(nacos_.SetInstances("web", {At(a_.get()), At(b_.get())}));
  ASSERT_NO_FATAL_FAILURE(StartReady(Section()));
  EXPECT_EQ(Spread("/status/200", 10), (std::map<std::string, int>{{"A", 5}, {"B", 5}}));
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
  EXPECT_EQ(Spread("/status/200", 3), (std::map<std::string, int>{{"A", 3}}));
  EXPECT_EQ(Spread("/dev/status/200", 3), (std::map<std::string, int>{{"B", 3}}));
}

TEST_F(DiscoveryNacosTest, TheRegistryGoneKeepsTheLastNodes) {
  ASSERT_TRUE(nacos_.SetInstances("web", {At(a_.get()), At(b_.get())}));
  ASSERT_NO_FATAL_FAILURE(StartReady(Section()));
  EXPECT_EQ(Spread("/status/200", 4).size(), 2u);
  nacos_.Kill();
  auto until = std::chrono::steady_clock::now() + seconds(4);  // several fetch intervals
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_EQ(Spread("/status/200", 2), (std::map<std::string, int>{{"A", 1}, {"B", 1}}));
  }
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
  struct Case {
    std::string section;
    std::string message;
  };
  for (const Case& c : {
           Case{"  nacos: {}\n", "discovery.nacos: host: is required"},
           Case{"  nacos:\n    host: [\"tcp://127.0.0.1:8848\"]\n",
                "discovery.nacos: host[0]: \"tcp://127.0.0.1:8848\" is not"},
           Case{"  nacos:\n    host: [\"http://127.0.0.1:8848\"]\n    fetch_interval: 0\n",
                "discovery.nacos: fetch_interval: must be an integer >= 1"},
           Case{"  nacos:\n    host: [\"http://127.0.0.1:8848\"]\n    hosts: []\n",
                "discovery.nacos: unknown field \"hosts\""},
       }) {
    SCOPED_TRACE(c.section);
    Turnpike gw(kTurnpikeBin);
    EXPECT_FALSE(gw.Start(Routes(), Options(c.section)));
    EXPECT_NE(gw.Stderr().find(c.message), std::string::npos) << gw.Stderr();
  }
}

}  // namespace
}  // namespace turnpike::itest
