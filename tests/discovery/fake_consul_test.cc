// The FAKE Consul agent the consul provider's tests run against (support/fake_consul.h): that
// it answers as Consul's HTTP API documents — catalog/services, health/service with the
// passing filter, health/state/any, X-Consul-Index per endpoint, blocking queries that hold
// until the index moves or the wait runs out, the ACL token, faults.
#include "support/fake_consul.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "support/http_client.h"

namespace turnpike::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

class FakeConsulTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(consul_.Start());
    consul_.Register(FakeConsul::Make("web-1", "web", "10.0.0.1", 8080, {"v1"}));
    consul_.Register(FakeConsul::Make("web-2", "web", "10.0.0.2", 8081));
  }

  HttpResponse Get(const std::string& target, const Headers& headers = {}) {
    return testing::Get(consul_.port(), target, headers);
  }
  static uint64_t Index(const HttpResponse& r) {
    return std::stoull(r.Header("X-Consul-Index").value_or("0"));
  }

  FakeConsul consul_;
};

TEST_F(FakeConsulTest, CatalogListsServicesWithTagsAndConsulItself) {
  HttpResponse r = Get("/v1/catalog/services");
  ASSERT_EQ(r.status, 200) << r.DebugString();
  EXPECT_EQ(r.Header("Content-Type"), "application/json");
  EXPECT_GT(Index(r), 1u);
  EXPECT_EQ(json::parse(r.body), json::parse(R"({"consul": [], "web": ["v1"]})"));
}

TEST_F(FakeConsulTest, HealthServiceFiltersPassingInstances) {
  consul_.SetStatus("web-2", "critical");
  json all = json::parse(Get("/v1/health/service/web").body);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0]["Service"]["Address"], "10.0.0.1");
  EXPECT_EQ(all[0]["Service"]["Port"], 8080);
  EXPECT_EQ(all[0]["Node"]["Address"], "127.0.0.1");
  EXPECT_EQ(all[1]["Checks"][1]["Status"], "critical");
  for (const char* query : {"?passing=true", "?passing", "?passing=1"}) {
    json passing = json::parse(Get(std::string("/v1/health/service/web") + query).body);
    ASSERT_EQ(passing.size(), 1u) << query;
    EXPECT_EQ(passing[0]["Service"]["ID"], "web-1");
  }
  // An unknown service: an empty list, with an index.
  HttpResponse none = Get("/v1/health/service/nope?passing=true");
  EXPECT_EQ(none.status, 200);
  EXPECT_EQ(none.body, "[]");
  EXPECT_GT(Index(none), 0u);
  EXPECT_EQ(Get("/v1/agent/self").status, 404);
}

TEST_F(FakeConsulTest, IndexesFollowWhatEachEndpointSees) {
  uint64_t catalog = Index(Get("/v1/catalog/services"));
  uint64_t health = Index(Get("/v1/health/state/any"));
  uint64_t web = Index(Get("/v1/health/service/web"));
  // A check turning critical moves the health indexes, not the catalog's.
  consul_.SetStatus("web-1", "critical");
  EXPECT_EQ(Index(Get("/v1/catalog/services")), catalog);
  EXPECT_GT(Index(Get("/v1/health/state/any")), health);
  EXPECT_GT(Index(Get("/v1/health/service/web")), web);
  json checks = json::parse(Get("/v1/health/state/any").body);
  bool found = false;
  for (const json& c : checks) found |= c["ServiceID"] == "web-1" && c["Status"] == "critical";
  EXPECT_TRUE(found) << checks.dump();
  // A registration moves the catalog's.
  consul_.Register(FakeConsul::Make("api", "api", "10.0.0.9", 1));
  EXPECT_GT(Index(Get("/v1/catalog/services")), catalog);
  consul_.Deregister("api");
  EXPECT_EQ(json::parse(Get("/v1/catalog/services").body).count("api"), 0u);
}

TEST_F(FakeConsulTest, BlockingQueryWaitsOutItsWaitWhenNothingChanges) {
  uint64_t index = Index(Get("/v1/catalog/services"));
  auto start = steady_clock::now();
  HttpResponse r = Get("/v1/catalog/services?index=" + std::to_string(index) + "&wait=300ms");
  auto took = steady_clock::now() - start;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(Index(r), index);
  EXPECT_GE(took, milliseconds(290));
  EXPECT_LT(took, milliseconds(3000));
  // index=0 does not block.
  start = steady_clock::now();
  EXPECT_EQ(Get("/v1/catalog/services?index=0&wait=5s").status, 200);
  EXPECT_LT(steady_clock::now() - start, milliseconds(1000));
}

TEST_F(FakeConsulTest, BlockingQueryReturnsOnceItsIndexMoves) {
  uint64_t index = Index(Get("/v1/health/service/web"));
  HttpResponse r;
  std::thread waiter([&] {
    r = Get("/v1/health/service/web?passing=true&index=" + std::to_string(index) + "&wait=20s");
  });
  while (consul_.blocked() == 0) std::this_thread::sleep_for(milliseconds(5));
  // Another service's change does not wake it.
  consul_.Register(FakeConsul::Make("db", "db", "10.0.1.1", 5432));
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(consul_.blocked(), 1);
  auto start = steady_clock::now();
  consul_.SetStatus("web-2", "critical");
  waiter.join();
  EXPECT_LT(steady_clock::now() - start, milliseconds(2000));
  ASSERT_EQ(r.status, 200) << r.DebugString();
  EXPECT_GT(Index(r), index);
  EXPECT_EQ(json::parse(r.body).size(), 1u);
}

TEST_F(FakeConsulTest, WaitNeedsAUnitAsConsulSays) {
  HttpResponse r = Get("/v1/catalog/services?index=1&wait=60");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("Invalid wait time"), std::string::npos);
}

TEST_F(FakeConsulTest, AclTokenFromHeaderBearerOrQuery) {
  consul_.SetToken("s3cret");
  EXPECT_EQ(Get("/v1/catalog/services", {{"X-Consul-Token", "wrong"}}).status, 403);
  HttpResponse anonymous = Get("/v1/catalog/services");
  EXPECT_EQ(anonymous.status, 200);
  EXPECT_EQ(anonymous.body, "{}");
  EXPECT_EQ(anonymous.Header("X-Consul-Results-Filtered-By-Acls"), "true");
  EXPECT_EQ(Get("/v1/health/service/web").body, "[]");
  for (const HttpResponse& r : {Get("/v1/catalog/services", {{"X-Consul-Token", "s3cret"}}),
                                Get("/v1/catalog/services", {{"Authorization", "Bearer s3cret"}}),
                                Get("/v1/catalog/services?token=s3cret")}) {
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(json::parse(r.body).count("web"), 1u) << r.body;
  }
  EXPECT_EQ(consul_.requests().back().token, "s3cret");
}

TEST_F(FakeConsulTest, FaultsAndRestartOnTheSamePort) {
  consul_.SetFailure(500);
  EXPECT_EQ(Get("/v1/catalog/services").status, 500);
  consul_.SetFailure(0);
  int port = consul_.port();
  // A blocked query is dropped when the server goes down.
  uint64_t index = Index(Get("/v1/catalog/services"));
  HttpResponse blocked;
  std::thread waiter(
      [&] { blocked = Get("/v1/catalog/services?index=" + std::to_string(index) + "&wait=20s"); });
  while (consul_.blocked() == 0) std::this_thread::sleep_for(milliseconds(5));
  consul_.Stop();
  waiter.join();
  EXPECT_NE(blocked.status, 200);
  EXPECT_NE(Get("/v1/catalog/services").status, 200);  // refused
  ASSERT_TRUE(consul_.Start(port));
  HttpResponse r = Get("/v1/catalog/services");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body).count("web"), 1u);
  EXPECT_EQ(consul_.Count("/v1/catalog/services"), 4);  // the refused one never arrived
}

}  // namespace
}  // namespace turnpike::testing
