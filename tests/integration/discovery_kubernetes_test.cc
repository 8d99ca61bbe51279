// Upstreams discovered from Kubernetes (apisix-behaviour.md §3.5, §5.5) through the daemon:
// config.yaml's `discovery.kubernetes` points at the FAKE Kubernetes API server of
// tests/support (fake_kube_apiserver.h; the real one cannot be installed here), whose
// Endpoints name the test's backends. Nodes served once the first list is in (/status/ready
// waits for it; ${ENV} forms), endpoints added and removed under the watch picked up promptly, 410
// Gone answered by a relist, the API server down (the last nodes keep serving) and back, namespace
// and label selectors, several clusters, and config errors that stop the daemon.

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "integration/discovery_fixture.h"
#include "support/fake_kube_apiserver.h"

namespace turnpike::itest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeKubeApiServer;
using Kind = FakeKubeApiServer::Kind;

class DiscoveryKubernetesTest : public DiscoveryTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(DiscoveryTest::SetUp());
    ASSERT_TRUE(api_.Start());
  }

  // Endpoints `ns`/`name` with 127.0.0.1 on the ports of `backends` (a subset each), under
  // the port name "http".
  static nlohmann::json Endpoints(const std::string& ns, const std::string& name,
                                  std::initializer_list<const Backend*> backends,
                                  const std::map<std::string, std::string>& labels = {}) {
    nlohmann::json obj = FakeKubeApiServer::Endpoints(ns, name, {}, {}, {}, labels);
    obj["subsets"] = nlohmann::json::array();
    for (const Backend* b : backends) {
      obj["subsets"].push_back({{"addresses", {{{"ip", "127.0.0.1"}}}},
                                {"ports", {{{"name", "http"}, {"port", b->port()}}}}});
    }
    return obj;
  }

  static std::string Routes(const std::string& prefix = "") {
    return Fill(R"(
routes:
  - uri: /status/*
    upstream:
      discovery_type: kubernetes
      service_name: "{P}default/web:http"
  - uri: /prod/*
    upstream:
      discovery_type: kubernetes
      service_name: "{P}prod/web:http"
  - uri: /hello
    upstream_id: db
upstreams:
  - id: db
    discovery_type: kubernetes
    service_name: "{P}default/db:http"
#END
)",
                {{"P", prefix}});
  }

  static std::string Cluster(const FakeKubeApiServer& api, const std::string& indent = "    ") {
    return indent + "service:\n" + indent + "  schema: http\n" + indent +
           "  host: \"127.0.0.1\"\n" + indent + "  port: \"" + std::to_string(api.port()) + "\"\n" +
           indent + "client:\n" + indent + "  token: fake-token\n";
  }

  // `extra` is the whole kubernetes section: one cluster's fields, or a list of clusters.
  std::string Discovery(const std::string& extra) const override {
    return "  kubernetes:\n" + extra;
  }

  FakeKubeApiServer api_;
};

TEST_F(DiscoveryKubernetesTest, ServesTheEndpointsAndFollowsTheWatchPromptly) {
  api_.Apply(Kind::kEndpoints, Endpoints("default", "web", {a_.get(), b_.get()}));
  ASSERT_NO_FATAL_FAILURE(StartReady(Routes(), Options(Cluster(api_))));
  EXPECT_EQ(Spread("/status/200", 10), (Spreads{{"A", 5}, {"B", 5}}));
  // No Endpoints object: no nodes, 503 as APISIX.
  HttpResponse none = Get(gw_.port(), "/hello");
  EXPECT_EQ(none.status, 503) << none.DebugString();
  ExpectJsonError(none);
  // Removed from the endpoints, added back, the object created and deleted: each change comes
  // through the open watch (one list in all) and reaches the workers within a second.
  api_.Apply(Kind::kEndpoints, Endpoints("default", "web", {b_.get()}));
  std::optional<milliseconds> took = Until("/status/200", {{"B", 4}}, 4);
  ASSERT_TRUE(took.has_value());
  EXPECT_LT(*took, milliseconds(1000));
  RecordProperty("watch_change_served_ms", static_cast<int>(took->count()));
  api_.Apply(Kind::kEndpoints, Endpoints("default", "web", {a_.get(), b_.get()}));
  ASSERT_TRUE(Until("/status/200", {{"A", 2}, {"B", 2}}, 4).has_value());
  api_.Apply(Kind::kEndpoints, Endpoints("default", "db", {a_.get()}));
  ASSERT_TRUE(Until("/hello", {{"A", 1}}, 1).has_value());
  api_.Delete(Kind::kEndpoints, "default", "db");
  ASSERT_TRUE(PollUntil([&] { return Get(gw_.port(), "/hello").status == 503; }, seconds(5)));
  EXPECT_EQ(api_.lists(), 1);
}

TEST_F(DiscoveryKubernetesTest, ReadyWaitsForTheFirstListAndEnvFormsAreRead) {
  api_.set_token("not-yet");  // every request is 401 at first
  api_.Apply(Kind::kEndpoints, Endpoints("default", "web", {a_.get()}));
  // The port and the token from the environment, in APISIX's ${NAME} form.
  TurnpikeOptions options = Options(
      "    service:\n      schema: http\n      host: 127.0.0.1\n"
      "      port: ${TP_KUBE_PORT}\n    client:\n      token: ${TP_KUBE_TOKEN}\n");
  options.env = {"TP_KUBE_PORT=" + std::to_string(api_.port()), "TP_KUBE_TOKEN=fake-token"};
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, Routes(), options));
  ASSERT_TRUE(WaitForPort(status_port_, seconds(5)));
  std::this_thread::sleep_for(milliseconds(500));
  HttpResponse waiting = Get(status_port_, "/status/ready");
  EXPECT_EQ(waiting.status, 503) << waiting.DebugString();
  EXPECT_EQ(Get(gw_.port(), "/status/200").status, 503);
  api_.set_token("fake-token");
  ASSERT_TRUE(PollUntil([&] { return Ready(); }, seconds(10)));
  EXPECT_EQ(Spread("/status/200", 2), (Spreads{{"A", 2}}));
  EXPECT_NE(gw_.Stderr().find("list: HTTP 401"), std::string::npos) << gw_.Stderr();
}

TEST_F(DiscoveryKubernetesTest, GoneRelistsAndAnApiServerDownKeepsTheLastNodes) {
  api_.Apply(Kind::kEndpoints, Endpoints("default", "web", {a_.get(), b_.get()}));
  ASSERT_NO_FATAL_FAILURE(StartReady(Routes(), Options(Cluster(api_))));
  ASSERT_TRUE(api_.WaitForOpenWatches(1, seconds(5)));
  // 410 in the watch stream: listed again, still serving.
  api_.ExpireWatches();
  ASSERT_TRUE(PollUntil([&] { return api_.lists() == 2 && api_.open_watches() == 1; }, seconds(5)));
  EXPECT_EQ(Spread("/status/200", 4).size(), 2u);
  // The API server goes away: the last nodes keep serving.
  api_.Stop();
  ASSERT_NO_FATAL_FAILURE(KeepsServing("/status/200", {{"A", 1}, {"B", 1}}, milliseconds(1500)));
  // It comes back having changed and compacted meanwhile: the re-watch is 410 Gone, the
  // relist brings the change.
  api_.Apply(Kind::kEndpoints, Endpoints("default", "web", {a_.get()}));
  api_.Compact();
  ASSERT_TRUE(api_.Start());
  ASSERT_TRUE(Until("/status/200", {{"A", 4}}, 4, seconds(15)).has_value());
  EXPECT_EQ(api_.lists(), 3);
  EXPECT_TRUE(Ready());
}

TEST_F(DiscoveryKubernetesTest, SelectorsAndSeveralClusters) {
  FakeKubeApiServer second;
  ASSERT_TRUE(second.Start());
  for (FakeKubeApiServer* api : {&api_, &second}) {
    const Backend* b = api == &api_ ? a_.get() : b_.get();
    api->Apply(Kind::kEndpoints, Endpoints("default", "web", {b}, {{"app", "web"}}));
    api->Apply(Kind::kEndpoints, Endpoints("prod", "web", {b}, {{"app", "web"}}));
    api->Apply(Kind::kEndpoints, Endpoints("default", "db", {b}, {{"app", "db"}}));
  }
  // Cluster "one" only sees namespace default (fieldSelector); cluster "two" only app=web.
  std::string discovery = "  - id: one\n" + Cluster(api_, "    ") +
                          "    namespace_selector:\n      equal: default\n" + "  - id: two\n" +
                          Cluster(second, "    ") + "    label_selector: app=web\n";
  std::string routes = Routes("one/");
  routes.insert(routes.find("upstreams:"),
                "  - uri: /echo\n    upstream: {discovery_type: kubernetes, service_name: "
                "\"two/prod/web:http\"}\n"
                "  - uri: /twodb\n    upstream: {discovery_type: kubernetes, service_name: "
                "\"two/default/db:http\"}\n");
  ASSERT_NO_FATAL_FAILURE(StartReady(routes, Options(discovery)));
  EXPECT_EQ(Spread("/status/200", 2), (Spreads{{"A", 2}}));
  EXPECT_EQ(BackendOf(Get(gw_.port(), "/hello")), "A");
  EXPECT_EQ(Get(gw_.port(), "/prod/x").status, 503) << "namespace prod is not selected";
  EXPECT_EQ(BackendOf(Get(gw_.port(), "/echo")), "B");
  EXPECT_EQ(Get(gw_.port(), "/twodb").status, 503) << "app=db is not selected";
  second.Apply(Kind::kEndpoints, Endpoints("prod", "web", {a_.get()}, {{"app", "web"}}));
  ASSERT_TRUE(Until("/echo", {{"A", 2}}, 2).has_value());
}

TEST_F(DiscoveryKubernetesTest, AReloadNamingANewServiceIsServedFromTheInformersView) {
  api_.Apply(Kind::kEndpoints, Endpoints("default", "web", {a_.get()}));
  api_.Apply(Kind::kEndpoints, Endpoints("default", "db", {b_.get()}));
  std::string routes = Routes();
  std::string without_db = routes.substr(0, routes.find("  - uri: /hello")) + "#END\n";
  ASSERT_NO_FATAL_FAILURE(StartReady(without_db, Options(Cluster(api_))));
  EXPECT_EQ(Get(gw_.port(), "/hello").status, 404);
  // default/db was never watched, but the informer holds every object: no new request to the
  // API server is needed once the reload names it.
  ASSERT_TRUE(gw_.RewriteRoutes(routes));
  ASSERT_TRUE(gw_.Reload());
  ASSERT_TRUE(PollUntil([&] { return Get(gw_.port(), "/hello").status == 200; }, seconds(10)))
      << Get(gw_.port(), "/hello").DebugString();
  EXPECT_EQ(BackendOf(Get(gw_.port(), "/hello")), "B");
  EXPECT_EQ(api_.lists(), 1);
  EXPECT_EQ(api_.watches(), 1);
}

// Node churn: a request on a node that leaves the set finishes there (it pinned its set);
// requests that start afterwards go to the new set.
TEST_F(DiscoveryKubernetesTest, ARequestInFlightKeepsItsNodeWhenTheSetDropsIt) {
  api_.Apply(Kind::kEndpoints, Endpoints("default", "web", {a_.get()}));
  const std::string routes =
      "routes:\n  - uri: /*\n    upstream:\n      discovery_type: kubernetes\n"
      "      service_name: default/web:http\n#END\n";
  ASSERT_NO_FATAL_FAILURE(StartReady(routes, Options(Cluster(api_))));
  HttpResponse slow;
  std::thread t([&] { slow = Get(gw_.port(), "/delay/1500"); });
  bool on_a = PollUntil([&] { return Get(a_->port(), "/inflight").body == "1"; }, seconds(5));
  api_.Apply(Kind::kEndpoints, Endpoints("default", "web", {b_.get()}));
  bool moved = Until("/status/200", {{"B", 4}}, 4).has_value();
  t.join();
  ASSERT_TRUE(on_a);
  ASSERT_TRUE(moved);
  EXPECT_EQ(slow.status, 200) << slow.DebugString();
  EXPECT_EQ(slow.Header("X-Backend-Id"), "A");
  EXPECT_EQ(slow.body, "delayed 1500\n");
}

// Node churn: the set changes every few milliseconds ({A}, {B}, {A, B} in turn) while requests
// run on kept-alive and new connections; both backends stay up, so every request must succeed.
TEST_F(DiscoveryKubernetesTest, ChurningSetFailsNoRequest) {
  api_.Apply(Kind::kEndpoints, Endpoints("default", "web", {a_.get(), b_.get()}));
  const std::string routes =
      "routes:\n  - uri: /*\n    upstream:\n      discovery_type: kubernetes\n"
      "      service_name: default/web:http\n#END\n";
  ASSERT_NO_FATAL_FAILURE(StartReady(routes, Options(Cluster(api_))));
  std::atomic<bool> done{false};
  std::atomic<int> changes{0};
  std::thread churn([&] {
    for (int i = 0; !done; ++i) {
      switch (i % 3) {
        case 0:
          api_.Apply(Kind::kEndpoints, Endpoints("default", "web", {a_.get()}));
          break;
        case 1:
          api_.Apply(Kind::kEndpoints, Endpoints("default", "web", {b_.get()}));
          break;
        default:
          api_.Apply(Kind::kEndpoints, Endpoints("default", "web", {a_.get(), b_.get()}));
      }
      ++changes;
      std::this_thread::sleep_for(milliseconds(3));
    }
  });
  std::map<std::string, int> seen;
  int failed = 0;
  std::string first_failure;
  {
    testing::HttpConnection kept(gw_.port());
    ASSERT_TRUE(kept.connected()) << kept.error();
    HttpRequest keep_alive;
    keep_alive.target = "/delay/1";
    const std::string kept_request = keep_alive.Serialize(gw_.port());
    for (int i = 0; i < 400; ++i) {
      HttpResponse r = (i % 2 == 0) ? kept.RoundTrip(kept_request) : Get(gw_.port(), "/status/200");
      if (r.status != 200) {
        if (failed++ == 0) first_failure = r.DebugString();
        continue;
      }
      ++seen[r.Header("X-Backend-Id").value_or("?")];
    }
  }
  done = true;
  churn.join();
  EXPECT_EQ(failed, 0) << first_failure;
  EXPECT_GT(changes.load(), 20);
  EXPECT_GT(seen["A"], 0);
  EXPECT_GT(seen["B"], 0);
  EXPECT_EQ(seen["A"] + seen["B"], 400);
}

TEST_F(DiscoveryKubernetesTest, BadSectionsStopTheDaemon) {
  ExpectBadSectionsStopTheDaemon(
      Routes(),
      {
          {"  kubernetes:\n    client:\n      token: t\n",
           "discovery.kubernetes: service.schema: https is not supported yet"},
          {"  kubernetes:\n    service:\n      schema: http\n      host: h\n      port: \"0\"\n",
           "discovery.kubernetes: service.port: invalid port value: 0"},
          {"  kubernetes:\n    - id: a\n      client:\n        token: t\n",
           "discovery.kubernetes: [0].service: is required"},
      });
}

}  // namespace
}  // namespace turnpike::itest
