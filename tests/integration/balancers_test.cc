// Balancers through the daemon (reference §3.3), with three test backends: chash sticks a key
// to one node (header, cookie, variable, vars_combinations, the client address when the key is
// missing) across connections and workers, and retries a dead node's keys on the next node of
// the ring; least_conn sends new requests to the idle node while a slow one holds its request;
// ewma moves away from a node that answered slowly.
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "integration/itest.h"

namespace turnpike::itest {
namespace {

class BalancersTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backends_ = StartBackends({"A", "B", "C"}); }
  static void TearDownTestSuite() { backends_.clear(); }
  void SetUp() override { ASSERT_EQ(backends_.size(), 3u); }

  // One route /* to an upstream of the three backends with `settings` (YAML flow-map items,
  // e.g. "type: chash, key: arg_user").
  void StartWith(const std::string& settings, const TurnpikeOptions& options = {},
                 const std::string& extra_nodes = "") {
    std::string routes = Fill(R"(
routes:
  - uri: /*
    upstream_id: u
upstreams:
  - id: u
    {SETTINGS}
    nodes: [{A}, {B}, {C}{EXTRA}]
#END
)",
                              {{"SETTINGS", settings},
                               {"A", Node(backends_[0]->port())},
                               {"B", Node(backends_[1]->port())},
                               {"C", Node(backends_[2]->port())},
                               {"EXTRA", extra_nodes}});
    ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, routes, options));
  }

  // The backend that serves GET `target` with `headers`, the same on every one of `times`
  // fresh connections (so both workers answer); "" when they disagree or fail.
  std::string StickyBackend(const std::string& target, const Headers& headers, int times = 6) {
    std::string first;
    for (int i = 0; i < times; ++i) {
      HttpResponse r = Get(gw_.port(), target, headers);
      if (r.status != 200) {
        ADD_FAILURE() << r.DebugString();
        return "";
      }
      if (i == 0) first = BackendOf(r);
      if (BackendOf(r) != first) return "";
    }
    return first;
  }

  static inline std::vector<std::unique_ptr<Backend>> backends_;
  Turnpike gw_{kTurnpikeBin};
};

TEST_F(BalancersTest, ChashByHeaderIsStickyPerKeyAndSpreadsKeys) {
  ASSERT_NO_FATAL_FAILURE(StartWith("type: chash\n    hash_on: header\n    key: X-User"));
  std::set<std::string> used;
  for (int user = 0; user < 24; ++user) {
    const std::string b = StickyBackend("/hello", {{"X-User", "user-" + std::to_string(user)}});
    ASSERT_FALSE(b.empty()) << "user-" << user << " moved between requests";
    used.insert(b);
  }
  EXPECT_EQ(used.size(), 3u) << "24 keys over 3 equal nodes use them all";
}

TEST_F(BalancersTest, ChashByCookieVarAndCombination) {
  ASSERT_NO_FATAL_FAILURE(StartWith("type: chash\n    hash_on: cookie\n    key: sid"));
  std::set<std::string> used;
  for (int s = 0; s < 16; ++s) {
    const std::string b =
        StickyBackend("/hello", {{"Cookie", "theme=dark; sid=s" + std::to_string(s)}});
    ASSERT_FALSE(b.empty()) << "sid s" << s;
    used.insert(b);
  }
  EXPECT_GE(used.size(), 2u);
  gw_.Stop();

  ASSERT_NO_FATAL_FAILURE(StartWith("type: chash\n    key: arg_user"));
  used.clear();
  for (int u = 0; u < 16; ++u) {
    const std::string b = StickyBackend("/hello?user=u" + std::to_string(u), {});
    ASSERT_FALSE(b.empty()) << "user u" << u;
    used.insert(b);
    // The key alone decides: another path with the same argument goes to the same node.
    EXPECT_EQ(StickyBackend("/echo/x?a=1&user=u" + std::to_string(u), {}, 2), b);
  }
  EXPECT_GE(used.size(), 2u);
  gw_.Stop();

  ASSERT_NO_FATAL_FAILURE(
      StartWith("type: chash\n    hash_on: vars_combinations\n    key: \"$http_x_tenant:$arg_u\""));
  used.clear();
  for (int t = 0; t < 16; ++t) {
    const std::string b = StickyBackend("/hello?u=1", {{"X-Tenant", "t" + std::to_string(t)}});
    ASSERT_FALSE(b.empty()) << "tenant t" << t;
    used.insert(b);
  }
  EXPECT_GE(used.size(), 2u);
}

TEST_F(BalancersTest, ChashWithoutTheKeyHashesTheClientAddress) {
  ASSERT_NO_FATAL_FAILURE(StartWith("type: chash\n    hash_on: header\n    key: X-User"));
  // No X-User: every request comes from 127.0.0.1, so all go to one node.
  const std::string b = StickyBackend("/hello", {}, 10);
  EXPECT_FALSE(b.empty()) << "requests without the key moved between nodes";
  gw_.Stop();
  ASSERT_NO_FATAL_FAILURE(StartWith("type: chash\n    hash_on: consumer"));
  EXPECT_EQ(StickyBackend("/hello", {}, 10), b)
      << "no consumer: the client address, the same key as above";
}

TEST_F(BalancersTest, ChashRetriesADeadNodesKeysOnTheNextNode) {
  // A fourth node nobody listens on: the keys it owns are retried on a live node, and each
  // key keeps going to the same live node.
  const int dead = FreePort();
  ASSERT_NO_FATAL_FAILURE(
      StartWith("type: chash\n    hash_on: header\n    key: X-User", {}, ", " + Node(dead)));
  std::set<std::string> used;
  for (int user = 0; user < 40; ++user) {
    const std::string b = StickyBackend("/hello", {{"X-User", "u" + std::to_string(user)}}, 3);
    ASSERT_FALSE(b.empty()) << "u" << user;
    used.insert(b);
  }
  EXPECT_EQ(used.size(), 3u);
}

TEST_F(BalancersTest, LeastConnSendsNewRequestsToTheIdleNode) {
  TurnpikeOptions one_worker;
  one_worker.worker_processes = 1;  // in-flight counts are per worker
  ASSERT_NO_FATAL_FAILURE(StartWith("type: least_conn", one_worker));
  // A's answers take 1.5 s, the others' none: while A holds a request, least_conn prefers B
  // and C, whose requests end at once.
  std::vector<HttpConnection> conns;
  std::vector<std::string> seen;
  for (int i = 0; i < 12; ++i) {
    conns.emplace_back(gw_.port());
    ASSERT_TRUE(conns.back().connected());
    ASSERT_TRUE(
        conns.back().Send(HttpRequest{"GET", "/delay-on/A/1500", {}, ""}.Serialize(gw_.port())));
    if (i > 0) {
      // Every request but the first is answered before the next goes out, unless on A.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  std::map<std::string, int> counts;
  for (HttpConnection& c : conns) {
    c.set_timeout(std::chrono::seconds(10));
    HttpResponse r = c.ReadResponse();
    ASSERT_EQ(r.status, 200) << r.DebugString();
    ++counts[BackendOf(r)];
  }
  // Round robin would give A 4; least_conn gives it the first request, and another only if B
  // and C were both still busy (a loaded machine).
  EXPECT_LE(counts["A"], 2) << "A holds a request in flight: it is picked only when idle";
  EXPECT_EQ(counts["B"] + counts["C"], 12 - counts["A"]);
  EXPECT_GE(counts["B"], 4) << "B and C, both idle, take turns";
  EXPECT_GE(counts["C"], 4);
}

TEST_F(BalancersTest, EwmaMovesAwayFromTheSlowNode) {
  TurnpikeOptions one_worker;
  one_worker.worker_processes = 1;  // latencies are per worker
  ASSERT_NO_FATAL_FAILURE(StartWith("type: ewma", one_worker));
  std::map<std::string, int> counts;
  std::map<std::string, int> late;
  for (int i = 0; i < 40; ++i) {
    HttpResponse r = Get(gw_.port(), "/delay-on/A/150");
    ASSERT_EQ(r.status, 200) << r.DebugString();
    ++counts[BackendOf(r)];
    if (i >= 20) ++late[BackendOf(r)];
  }
  // A is drawn until it answered once (150 ms), then loses every draw against B or C.
  EXPECT_LE(counts["A"], 3) << "A: " << counts["A"] << ", B: " << counts["B"]
                            << ", C: " << counts["C"];
  EXPECT_EQ(late["A"], 0);
  EXPECT_GT(counts["B"], 0);
  EXPECT_GT(counts["C"], 0);
}

TEST_F(BalancersTest, BadChashKeySkipsTheUpstreamWithAnError) {
  std::string routes = Fill(R"(
routes:
  - uri: /*
    upstream_id: u
upstreams:
  - id: u
    type: chash
    hash_on: header
    key: "not a header"
    nodes: [{A}]
#END
)",
                            {{"A", Node(backends_[0]->port())}});
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, routes));
  HttpResponse r = Get(gw_.port(), "/hello");
  EXPECT_EQ(r.status, 502) << "upstream_id of a skipped upstream: 502\n" << r.DebugString();
  EXPECT_NE(gw_.Stderr().find("upstreams[0].key: invalid key \"not a header\" for hash_on header"),
            std::string::npos)
      << gw_.Stderr();
}

}  // namespace
}  // namespace turnpike::itest
