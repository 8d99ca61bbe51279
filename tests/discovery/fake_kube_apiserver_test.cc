// The FAKE Kubernetes API server of tests/support (fake_kube_apiserver.h) checked on its own,
// with a raw HTTP client, before the kubernetes provider's tests rely on it: list shapes and
// pagination, selectors, the bearer token, watch streams (history from a resourceVersion,
// live events, bookmarks, timeoutSeconds, 410 for a compacted version, as an event or as the
// HTTP status), and a restart on the same port keeping the objects.
#include "support/fake_kube_apiserver.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "support/http_client.h"

namespace turnpike::testing {
namespace {

using Kind = FakeKubeApiServer::Kind;

HttpResponse KubeGet(const FakeKubeApiServer& api, const std::string& target,
                     const std::string& token = "fake-token") {
  HttpRequest req;
  req.target = target;
  if (!token.empty()) req.headers.emplace_back("Authorization", "Bearer " + token);
  return Fetch(api.port(), req);
}

nlohmann::json Body(const HttpResponse& r) { return nlohmann::json::parse(r.body, nullptr, false); }

// The events of a watch body (one JSON document per line).
std::vector<nlohmann::json> Events(const std::string& body) {
  std::vector<nlohmann::json> out;
  size_t start = 0, nl;
  while ((nl = body.find('\n', start)) != std::string::npos) {
    out.push_back(nlohmann::json::parse(body.substr(start, nl - start)));
    start = nl + 1;
  }
  return out;
}

std::vector<std::string> Names(const nlohmann::json& list) {
  std::vector<std::string> out;
  for (const auto& item : list["items"]) {
    out.push_back(item["metadata"]["namespace"].get<std::string>() + "/" +
                  item["metadata"]["name"].get<std::string>());
  }
  return out;
}

class FakeKubeApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(api_.Start()); }
  void Seed() {
    api_.Apply(Kind::kEndpoints,
               FakeKubeApiServer::Endpoints("default", "web", {"10.0.0.1"}, {{"http", 80}}, {},
                                            {{"app", "web"}}));
    api_.Apply(Kind::kEndpoints,
               FakeKubeApiServer::Endpoints("default", "db", {"10.0.0.2"}, {{"", 5432}}, {},
                                            {{"app", "db"}, {"tier", "data"}}));
    api_.Apply(Kind::kEndpoints,
               FakeKubeApiServer::Endpoints("prod", "web", {"10.0.1.1"}, {{"http", 80}}, {},
                                            {{"app", "web"}}));
    api_.Apply(Kind::kEndpointSlices,
               FakeKubeApiServer::EndpointSlice("default", "web-abc", "web", {{"10.0.0.1"}},
                                                {{"http", 80}}));
  }
  // The events of an endpoints watch opened from the current version while `changes` runs
  // on another thread (once the watch is open); the watch is ended after them.
  std::vector<nlohmann::json> WatchDuring(const std::function<void()>& changes) {
    std::thread t([&] {
      EXPECT_TRUE(api_.WaitForOpenWatches(1, std::chrono::seconds(5)));
      changes();
      api_.EndWatches();
    });
    HttpResponse r = KubeGet(api_, "/api/v1/endpoints?watch=true&resourceVersion=" +
                                       std::to_string(api_.resource_version()));
    t.join();
    EXPECT_EQ(r.status, 200);
    return Events(r.body);
  }
  FakeKubeApiServer api_;
};

TEST_F(FakeKubeApiServerTest, ListsAreTypedSortedAndCarryTheResourceVersion) {
  Seed();
  HttpResponse r = KubeGet(api_, "/api/v1/endpoints");
  ASSERT_EQ(r.status, 200) << r.DebugString();
  nlohmann::json list = Body(r);
  EXPECT_EQ(list["kind"], "EndpointsList");
  EXPECT_EQ(list["metadata"]["resourceVersion"], std::to_string(api_.resource_version()));
  EXPECT_EQ(Names(list), (std::vector<std::string>{"default/db", "default/web", "prod/web"}));
  // Each object has the version of its last change.
  EXPECT_EQ(list["items"][1]["metadata"]["resourceVersion"], "101");
  EXPECT_EQ(list["items"][1]["subsets"][0]["addresses"][0]["ip"], "10.0.0.1");
  nlohmann::json slices = Body(KubeGet(api_, "/apis/discovery.k8s.io/v1/endpointslices"));
  EXPECT_EQ(slices["kind"], "EndpointSliceList");
  EXPECT_EQ(Names(slices), (std::vector<std::string>{"default/web-abc"}));
  EXPECT_EQ(Names(Body(KubeGet(api_, "/api/v1/namespaces/prod/endpoints"))),
            (std::vector<std::string>{"prod/web"}));
  EXPECT_EQ(KubeGet(api_, "/api/v1/pods").status, 404);
}

TEST_F(FakeKubeApiServerTest, PaginatesWithLimitAndContinue) {
  Seed();
  nlohmann::json p1 = Body(KubeGet(api_, "/api/v1/endpoints?limit=2"));
  EXPECT_EQ(Names(p1), (std::vector<std::string>{"default/db", "default/web"}));
  std::string cont = p1["metadata"]["continue"];
  ASSERT_FALSE(cont.empty());
  nlohmann::json p2 = Body(KubeGet(api_, "/api/v1/endpoints?limit=2&continue=" + cont));
  EXPECT_EQ(Names(p2), (std::vector<std::string>{"prod/web"}));
  EXPECT_FALSE(p2["metadata"].contains("continue"));
  // A continue token from before a compaction is expired.
  api_.Compact();
  api_.Apply(Kind::kEndpoints, FakeKubeApiServer::Endpoints("x", "y", {}, {}));
  HttpResponse gone = KubeGet(api_, "/api/v1/endpoints?limit=2&continue=" + cont);
  EXPECT_EQ(gone.status, 410) << gone.DebugString();
  EXPECT_EQ(Body(gone)["reason"], "Expired");
}

TEST_F(FakeKubeApiServerTest, LabelAndFieldSelectors) {
  Seed();
  auto names = [&](const std::string& query) {
    return Names(Body(KubeGet(api_, "/api/v1/endpoints?" + query)));
  };
  EXPECT_EQ(names("labelSelector=app%3Dweb"),
            (std::vector<std::string>{"default/web", "prod/web"}));
  EXPECT_EQ(names("labelSelector=app%21%3Dweb"), (std::vector<std::string>{"default/db"}));
  EXPECT_EQ(names("labelSelector=tier"), (std::vector<std::string>{"default/db"}));
  EXPECT_EQ(names("labelSelector=%21tier"), (std::vector<std::string>{"default/web", "prod/web"}));
  EXPECT_EQ(names("labelSelector=app%20in%20%28db%2Cweb%29%2Ctier%20notin%20%28data%29"),
            (std::vector<std::string>{"default/web", "prod/web"}));
  EXPECT_EQ(names("fieldSelector=metadata.namespace%3Ddefault"),
            (std::vector<std::string>{"default/db", "default/web"}));
  EXPECT_EQ(names("fieldSelector=metadata.namespace%21%3Ddefault"),
            (std::vector<std::string>{"prod/web"}));
  EXPECT_EQ(KubeGet(api_, "/api/v1/endpoints?fieldSelector=spec.x%3Dy").status, 400);
}

TEST_F(FakeKubeApiServerTest, RequiresTheBearerToken) {
  HttpResponse none = KubeGet(api_, "/api/v1/endpoints", "");
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(Body(none)["code"], 401);
  EXPECT_EQ(KubeGet(api_, "/api/v1/endpoints", "wrong").status, 401);
  EXPECT_EQ(KubeGet(api_, "/api/v1/endpoints").status, 200);
  api_.set_token("rotated");
  EXPECT_EQ(KubeGet(api_, "/api/v1/endpoints").status, 401);
  EXPECT_EQ(KubeGet(api_, "/api/v1/endpoints", "rotated").status, 200);
  ASSERT_FALSE(api_.requests().empty());
  EXPECT_EQ(api_.requests().back().authorization, "Bearer rotated");
  api_.set_fail_status(503);
  EXPECT_EQ(KubeGet(api_, "/api/v1/endpoints", "rotated").status, 503);
}

TEST_F(FakeKubeApiServerTest, WatchReplaysFromTheVersionThenStreamsUntilTimeout) {
  Seed();
  int64_t after_web = 101;
  std::thread changer([&] {
    ASSERT_TRUE(api_.WaitForOpenWatches(1, std::chrono::seconds(5)));
    api_.Delete(Kind::kEndpoints, "default", "db");
    api_.Apply(Kind::kEndpoints,
               FakeKubeApiServer::Endpoints("default", "web", {"10.0.0.9"}, {{"http", 80}}));
    api_.Apply(Kind::kEndpointSlices,  // another collection: not in this watch
               FakeKubeApiServer::EndpointSlice("default", "web-xyz", "web", {}, {}));
  });
  HttpResponse r = KubeGet(api_, "/api/v1/endpoints?watch=true&timeoutSeconds=1&resourceVersion=" +
                                     std::to_string(after_web));
  changer.join();
  ASSERT_EQ(r.status, 200) << r.DebugString();
  EXPECT_TRUE(r.chunked);
  std::vector<nlohmann::json> events = Events(r.body);
  std::vector<std::string> seen;
  for (const auto& e : events) {
    seen.push_back(e["type"].get<std::string>() + " " +
                   e["object"]["metadata"]["name"].get<std::string>() + " " +
                   e["object"]["metadata"]["resourceVersion"].get<std::string>());
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED db 102", "ADDED web 103", "DELETED db 105",
                                            "MODIFIED web 106"}));
  EXPECT_EQ(api_.open_watches(), 0);
}

TEST_F(FakeKubeApiServerTest, WatchWithoutVersionStartsWithTheCurrentObjectsAndSelectors) {
  Seed();
  HttpResponse r = KubeGet(
      api_,
      "/api/v1/endpoints?watch=true&timeoutSeconds=1&fieldSelector=metadata.namespace%3Dprod");
  ASSERT_EQ(r.status, 200);
  std::vector<nlohmann::json> events = Events(r.body);
  ASSERT_EQ(events.size(), 1u) << r.body;
  EXPECT_EQ(events[0]["type"], "ADDED");
  EXPECT_EQ(events[0]["object"]["metadata"]["namespace"], "prod");
}

TEST_F(FakeKubeApiServerTest, BookmarksOnlyWhenAllowed) {
  std::thread t([&] {
    ASSERT_TRUE(api_.WaitForOpenWatches(2, std::chrono::seconds(5)));
    api_.SendBookmarks();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    api_.EndWatches();
  });
  HttpResponse with, without;
  std::thread other(
      [&] { without = KubeGet(api_, "/api/v1/endpoints?watch=true&resourceVersion=100"); });
  with = KubeGet(api_, "/api/v1/endpoints?watch=true&allowWatchBookmarks=true&resourceVersion=100");
  other.join();
  t.join();
  std::vector<nlohmann::json> events = Events(with.body);
  ASSERT_EQ(events.size(), 1u) << with.body;
  EXPECT_EQ(events[0]["type"], "BOOKMARK");
  EXPECT_EQ(events[0]["object"]["metadata"]["resourceVersion"], "100");
  EXPECT_EQ(without.status, 200);
  EXPECT_TRUE(without.body.empty()) << without.body;
}

TEST_F(FakeKubeApiServerTest, CompactedVersionIsGone) {
  Seed();
  api_.Compact();
  HttpResponse r = KubeGet(api_, "/api/v1/endpoints?watch=true&resourceVersion=101");
  ASSERT_EQ(r.status, 200);
  std::vector<nlohmann::json> events = Events(r.body);
  ASSERT_EQ(events.size(), 1u) << r.body;
  EXPECT_EQ(events[0]["type"], "ERROR");
  EXPECT_EQ(events[0]["object"]["code"], 410);
  // The current version still watches.
  std::thread t([&] {
    ASSERT_TRUE(api_.WaitForOpenWatches(1, std::chrono::seconds(5)));
    api_.ExpireWatches();  // and an open watch can be told its version expired
  });
  HttpResponse open = KubeGet(api_, "/api/v1/endpoints?watch=true&resourceVersion=" +
                                        std::to_string(api_.resource_version()));
  t.join();
  events = Events(open.body);
  ASSERT_EQ(events.size(), 1u) << open.body;
  EXPECT_EQ(events[0]["object"]["code"], 410);
}

TEST_F(FakeKubeApiServerTest, OpenWatchGoesOnAfterACompaction) {
  // A compaction forgets the history for new watches; one already open still gets the
  // changes made after it (the churn benchmark compacts while the provider watches).
  Seed();
  std::vector<nlohmann::json> events = WatchDuring([&] {
    api_.Compact();
    api_.Apply(Kind::kEndpoints,
               FakeKubeApiServer::Endpoints("default", "late", {"10.0.0.9"}, {{"http", 80}}));
    api_.Apply(Kind::kEndpoints,
               FakeKubeApiServer::Endpoints("default", "later", {"10.0.0.8"}, {{"http", 80}}));
  });
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0]["type"], "ADDED");
  EXPECT_EQ(events[0]["object"]["metadata"]["name"], "late");
  EXPECT_EQ(events[1]["object"]["metadata"]["name"], "later");
}

TEST_F(FakeKubeApiServerTest, CompactionRightAfterAChangeKeepsItForOpenWatches) {
  // A change applied just before a compaction reaches the open watch although the watch had
  // not sent it yet (fake_kube_churn applies its 100th change and compacts at once).
  Seed();
  std::vector<nlohmann::json> events = WatchDuring([&] {
    for (int i = 0; i < 20; ++i) {
      api_.Apply(Kind::kEndpoints,
                 FakeKubeApiServer::Endpoints("default", "step", {"10.0.1." + std::to_string(i)},
                                              {{"http", 80}}));
      api_.Compact();
    }
  });
  ASSERT_EQ(events.size(), 20u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(events[static_cast<size_t>(i)]["object"]["subsets"][0]["addresses"][0]["ip"],
              "10.0.1." + std::to_string(i));
  }
}

TEST(FakeKubeApiServerHttpGoneTest, TooOldWatchAsHttpStatus) {
  FakeKubeApiServer::Options o;
  o.gone_as_http_status = true;
  FakeKubeApiServer api(o);
  ASSERT_TRUE(api.Start());
  api.Apply(Kind::kEndpoints, FakeKubeApiServer::Endpoints("a", "b", {}, {}));
  api.Compact();
  EXPECT_EQ(KubeGet(api, "/api/v1/endpoints?watch=true&resourceVersion=100").status, 410);
}

TEST_F(FakeKubeApiServerTest, RestartKeepsThePortAndTheObjects) {
  Seed();
  int port = api_.port();
  api_.Stop();
  EXPECT_FALSE(Get(port, "/api/v1/endpoints").ok());
  ASSERT_TRUE(api_.Start());
  EXPECT_EQ(api_.port(), port);
  EXPECT_EQ(Names(Body(KubeGet(api_, "/api/v1/endpoints"))).size(), 3u);
}

TEST_F(FakeKubeApiServerTest, KeepsTheConnectionAlive) {
  HttpConnection c(api_.port());
  ASSERT_TRUE(c.connected());
  for (int i = 0; i < 3; ++i) {
    HttpRequest req;
    req.target = "/api/v1/endpoints";
    req.headers = {{"Authorization", "Bearer fake-token"}};
    HttpResponse r = c.RoundTrip(req.Serialize(api_.port()));
    EXPECT_EQ(r.status, 200) << i << " " << r.DebugString();
  }
}

TEST_F(FakeKubeApiServerTest, WatchAppliesTheLabelSelectorToEvents) {
  Seed();
  std::thread changer([&] {
    ASSERT_TRUE(api_.WaitForOpenWatches(1, std::chrono::seconds(5)));
    api_.Apply(Kind::kEndpoints,
               FakeKubeApiServer::Endpoints("prod", "web", {"10.0.1.2"}, {{"http", 80}}, {},
                                            {{"app", "web"}}));
    api_.Apply(Kind::kEndpoints, FakeKubeApiServer::Endpoints("default", "db", {"10.0.0.3"},
                                                              {{"http", 80}}, {}, {{"app", "db"}}));
  });
  HttpResponse r = KubeGet(
      api_,
      "/api/v1/endpoints?watch=true&timeoutSeconds=1&labelSelector=app%3Dweb&resourceVersion=" +
          std::to_string(api_.resource_version()));
  changer.join();
  std::vector<nlohmann::json> events = Events(r.body);
  ASSERT_EQ(events.size(), 1u) << r.body;
  EXPECT_EQ(events[0]["type"], "MODIFIED");
  EXPECT_EQ(events[0]["object"]["metadata"]["namespace"], "prod");
}

}  // namespace
}  // namespace turnpike::testing
