// limit-count through the real daemon: one counter per key for the whole process, whichever
// worker serves the request; counters that survive a reload while the plugin's route and
// conf are unchanged, and start afresh when the conf changes; the quota headers, renamed by
// plugin_metadata; the rejection with rejected_code and rejected_msg.

#include <chrono>
#include <string>
#include <thread>

#include "integration/itest.h"
#include "support/redis.h"
#include "support/redis_cluster.h"

namespace turnpike::itest {
namespace {

using std::chrono::seconds;

class LimitCountTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backends_ = StartBackends({"A"}); }
  static void TearDownTestSuite() { backends_.clear(); }
  void SetUp() override { ASSERT_EQ(backends_.size(), 1u) << "backend did not start"; }

  std::string Routes(const std::string& yaml) {
    return Fill(yaml, {{"A", "{nodes: [" + Node(backends_[0]->port()) + "]}"}});
  }
  // A request on a new connection (so the two workers share the load).
  HttpResponse Send(const std::string& path, const Headers& headers = {}) {
    HttpRequest req;
    req.target = path;
    for (const auto& h : headers) req.headers.push_back(h);
    return Fetch(gw_.port(), req);
  }

  static inline std::vector<std::unique_ptr<Backend>> backends_;
  Turnpike gw_{kTurnpikeBin};
};

TEST_F(LimitCountTest, OneCounterForEveryWorker) {
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, Routes(R"(
routes:
  - id: limited
    uri: /hello
    upstream: {A}
    plugins:
      limit-count:
        count: 10
        time_window: 60
        key_type: constant
        key: all
        rejected_code: 429
        rejected_msg: "too many requests"
#END
)")));
  int ok = 0;
  int rejected = 0;
  for (int i = 0; i < 40; ++i) {
    HttpResponse r = Send("/hello");
    if (r.status == 200) {
      ++ok;
      EXPECT_EQ(r.Header("X-RateLimit-Limit").value_or(""), "10");
      EXPECT_EQ(r.Header("X-RateLimit-Remaining").value_or(""), std::to_string(10 - ok));
      EXPECT_EQ(r.body, "hello world\n");
    } else {
      ++rejected;
      EXPECT_EQ(r.status, 429) << r.DebugString();
      EXPECT_EQ(r.body, "{\"error_msg\":\"too many requests\"}\n");
      EXPECT_EQ(r.Header("X-RateLimit-Remaining").value_or(""), "0");
      EXPECT_TRUE(r.HasHeader("X-RateLimit-Reset"));
    }
  }
  EXPECT_EQ(ok, 10);  // two workers, one limit
  EXPECT_EQ(rejected, 30);
}

TEST_F(LimitCountTest, CountersSurviveAReloadUntilTheConfChanges) {
  const std::string limited = R"(
  - id: limited
    uri: /hello
    upstream: {A}
    plugins:
      limit-count: {count: 5, time_window: 60, key: http_x_user}
)";
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, Routes("routes:" + limited + "#END\n")));
  Headers alice = {{"X-User", "alice"}};
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(Send("/hello", alice).Header("X-RateLimit-Remaining").value_or(""),
              std::to_string(5 - i));
  }
  // Another route added: the limited route and its conf are unchanged, so is its counter.
  ASSERT_TRUE(gw_.RewriteRoutes(Routes("routes:" + limited + R"(
  - id: other
    uri: /status/201
    upstream: {A}
#END
)")));
  ASSERT_TRUE(gw_.Reload());
  ASSERT_TRUE(PollUntil([&] { return Send("/status/201").status == 201; }, seconds(5)));
  EXPECT_EQ(Send("/hello", alice).Header("X-RateLimit-Remaining").value_or(""), "1");
  // The conf changes: a new counter.
  ASSERT_TRUE(gw_.RewriteRoutes(Routes(R"(
routes:
  - id: limited
    uri: /hello
    upstream: {A}
    plugins:
      limit-count: {count: 7, time_window: 60, key: http_x_user}
#END
)")));
  ASSERT_TRUE(gw_.Reload());
  ASSERT_TRUE(PollUntil([&] { return Send("/status/201").status == 404; }, seconds(5)));
  HttpResponse r = Send("/hello", alice);
  EXPECT_EQ(r.Header("X-RateLimit-Limit").value_or(""), "7");
  EXPECT_EQ(r.Header("X-RateLimit-Remaining").value_or(""), "6");
}

TEST_F(LimitCountTest, MetadataNamesTheHeadersAndRulesPrefixThem) {
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, Routes(R"(
plugin_metadata:
  - id: limit-count
    limit_header: X-Quota
    remaining_header: X-Quota-Left
    reset_header: X-Quota-Reset
routes:
  - uri: /hello
    upstream: {A}
    plugins:
      limit-count: {count: 3, time_window: 30}
  - uri: /status/200
    upstream: {A}
    plugins:
      limit-count:
        rules:
          - {count: 2, time_window: 10, key: "$remote_addr", header_prefix: ip}
#END
)")));
  HttpResponse r = Send("/hello");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("X-Quota").value_or(""), "3");
  EXPECT_EQ(r.Header("X-Quota-Left").value_or(""), "2");
  EXPECT_EQ(r.Header("X-Quota-Reset").value_or(""), "30");
  EXPECT_FALSE(r.HasHeader("X-RateLimit-Limit"));
  r = Send("/status/200");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("X-ip-Quota").value_or(""), "2");
  EXPECT_EQ(r.Header("X-ip-Quota-Left").value_or(""), "1");
}

TEST_F(LimitCountTest, GroupMembersMustShareTheirConf) {
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, Routes(R"(
routes:
  - id: a
    uri: /hello
    upstream: {A}
    plugins:
      limit-count: {count: 2, time_window: 60, group: shared, key_type: constant, key: k}
  - id: b
    uri: /status/200
    upstream: {A}
    plugins:
      limit-count: {count: 2, time_window: 60, group: shared, key_type: constant, key: k}
  - id: c
    uri: /status/201
    upstream: {A}
    plugins:
      limit-count: {count: 5, time_window: 60, group: shared, key_type: constant, key: k}
#END
)")));
  EXPECT_EQ(Send("/hello").status, 200);
  EXPECT_EQ(Send("/status/200").status, 200);
  EXPECT_EQ(Send("/hello").status, 503);       // one counter for the group
  EXPECT_EQ(Send("/status/201").status, 404);  // its conf differs: the route is skipped
  EXPECT_NE(gw_.Stderr().find("group conf mismatched"), std::string::npos) << gw_.Stderr();
}

TEST_F(LimitCountTest, UnsupportedPoliciesAreConfigErrors) {
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, Routes(R"(
routes:
  - uri: /bad
    upstream: {A}
    plugins:
      limit-count: {count: 1, time_window: 1, policy: redis-cluster, redis_cluster_name: c,
                    redis_cluster_nodes: ["127.0.0.1:7000"], redis_cluster_ssl: true}
  - uri: /hello
    upstream: {A}
#END
)")));
  // The bad route is skipped with a config error, the rest serves.
  EXPECT_EQ(Send("/bad").status, 404);
  EXPECT_EQ(Send("/hello").status, 200);
  EXPECT_NE(gw_.Stderr().find("failed to check the configuration of plugin limit-count err: "
                              "property \"redis_cluster_ssl\" validation failed: TLS to Redis "
                              "is not supported yet"),
            std::string::npos)
      << gw_.Stderr();
}

// policy: redis, against a real redis-server on loopback.
class LimitCountRedisTest : public LimitCountTest {
 protected:
  void SetUp() override {
    LimitCountTest::SetUp();
    if (!testing::RedisServer::Available()) GTEST_SKIP() << "redis-server is not installed";
    ASSERT_TRUE(redis_.Start()) << redis_.error();
  }
  // A route limited through Redis; `extra` adds plugin fields ("allow_degradation: true").
  // One route item limited through Redis; `fields` are more limit-count lines (each
  // "        name: value\n").
  std::string RedisRoute(const std::string& id, const std::string& uri, const std::string& fields) {
    return "\n  - id: " + id + "\n    uri: " + uri +
           "\n    upstream: {A}\n    plugins:\n      limit-count:\n        time_window: 60\n"
           "        policy: redis\n        redis_host: 127.0.0.1\n        redis_port: " +
           std::to_string(redis_.port()) + "\n        redis_timeout: 300\n" + fields;
  }
  // The route every test here uses: /hello, limited per X-User to `count`, 429 past it.
  std::string RedisRoutes(int count) {
    return Routes("routes:" +
                  RedisRoute("r1", "/hello",
                             "        count: " + std::to_string(count) +
                                 "\n        key: http_x_user\n        rejected_code: 429\n") +
                  "#END\n");
  }

  testing::RedisServer redis_;
};

TEST_F(LimitCountRedisTest, TwoGatewaysOnOneRedisShareOneLimit) {
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, RedisRoutes(6)));
  Turnpike second{kTurnpikeBin};
  ASSERT_NO_FATAL_FAILURE(StartGateway(second, RedisRoutes(6)));
  Headers user = {{"X-User", "carol"}};
  int ok = 0;
  int rejected = 0;
  for (int i = 0; i < 10; ++i) {
    HttpRequest req;
    req.target = "/hello";
    req.headers = user;
    HttpResponse r = Fetch(i % 2 == 0 ? gw_.port() : second.port(), req);
    if (r.status == 200) {
      ++ok;
      EXPECT_EQ(r.Header("X-RateLimit-Remaining").value_or(""), std::to_string(6 - ok));
    } else {
      ++rejected;
      EXPECT_EQ(r.status, 429) << r.DebugString();
      EXPECT_EQ(r.Header("X-RateLimit-Remaining").value_or(""), "0");
    }
  }
  EXPECT_EQ(ok, 6);
  EXPECT_EQ(rejected, 4);
  // APISIX's key layout and window: plugin-limit-count:v1:<route key>:<conf crc>:<key>.
  std::string keys = redis_.Command({"KEYS", "plugin-limit-count:v1:*"});
  EXPECT_EQ(keys.rfind("plugin-limit-count:v1:/apisix/routes/r1:", 0), 0u) << keys;
  EXPECT_NE(keys.find(":carol"), std::string::npos) << keys;
  EXPECT_EQ(redis_.Command({"GET", keys}), "10");  // rejected requests count too
  int ttl = std::stoi(redis_.Command({"TTL", keys}));
  EXPECT_GT(ttl, 50);
  EXPECT_LE(ttl, 60);
}

TEST_F(LimitCountRedisTest, RedisDownFailsClosedOrDegradesAndRecovers) {
  ASSERT_NO_FATAL_FAILURE(
      StartGateway(gw_, Routes("routes:" + RedisRoute("strict", "/hello", "        count: 100\n") +
                               RedisRoute("lenient", "/status/200",
                                          "        count: 100\n        allow_degradation: true\n") +
                               "#END\n")));
  EXPECT_EQ(Send("/hello").status, 200);
  redis_.Kill();
  HttpResponse r = Send("/hello");
  EXPECT_EQ(r.status, 500) << r.DebugString();
  EXPECT_EQ(r.body, "{\"error_msg\":\"failed to limit count\"}\n");
  EXPECT_EQ(Send("/status/200").status, 200);  // allow_degradation lets it through
  ASSERT_TRUE(redis_.Start()) << redis_.error();
  // Back within the reconnect back-off (at most 5 s), on both workers.
  auto all_counted = [&] {
    for (int i = 0; i < 6; ++i) {
      HttpResponse ok = Send("/hello");
      if (ok.status != 200 || ok.Header("X-RateLimit-Limit").value_or("") != "100") return false;
    }
    return true;
  };
  EXPECT_TRUE(PollUntil(all_counted, seconds(12)));
}

TEST_F(LimitCountRedisTest, ASlowRedisTimesOutAndAClientThatLeavesIsForgotten) {
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, RedisRoutes(100)));
  EXPECT_EQ(Send("/hello").status, 200);
  redis_.Pause();
  // A client that gives up while its request waits for Redis: nothing breaks.
  {
    HttpConnection leaving(gw_.port());
    leaving.Send(HttpRequest{"GET", "/hello", {{"X-User", "dave"}}, ""}.Serialize(gw_.port()));
  }
  auto start = std::chrono::steady_clock::now();
  HttpResponse r = Send("/hello");
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.status, 500) << r.DebugString();
  EXPECT_LT(took, seconds(3)) << "redis_timeout is 300 ms";
  redis_.Resume();
  EXPECT_TRUE(PollUntil([&] { return Send("/hello").status == 200; }, seconds(10)));
  EXPECT_TRUE(gw_.process()->Running());
}

// The sliding windows' id now (60 s windows), after waiting, when less than `margin` is left of
// the current one, for the next: a test that must stay in one window does not straddle two.
int64_t SlidingWindowNow(std::chrono::seconds margin) {
  using std::chrono::system_clock;
  auto ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               system_clock::now().time_since_epoch())
        .count();
  };
  int64_t left = 60'000 - ms() % 60'000;
  if (left < std::chrono::duration_cast<std::chrono::milliseconds>(margin).count()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(left + 50));
  }
  return ms() / 60'000;
}

TEST_F(LimitCountRedisTest, TwoGatewaysShareOneSlidingWindowInApisixLayout) {
  const std::string routes =
      Routes("routes:" +
             RedisRoute("r1", "/hello",
                        "        count: 6\n        key: http_x_user\n        rejected_code: 429\n"
                        "        window_type: sliding\n") +
             "#END\n");
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, routes));
  Turnpike second{kTurnpikeBin};
  ASSERT_NO_FATAL_FAILURE(StartGateway(second, routes));
  const int64_t window = SlidingWindowNow(seconds(20));
  int ok = 0;
  int rejected = 0;
  for (int i = 0; i < 10; ++i) {
    HttpRequest req;
    req.target = "/hello";
    req.headers = {{"X-User", "carol"}};
    HttpResponse r = Fetch(i % 2 == 0 ? gw_.port() : second.port(), req);
    double reset = std::stod(r.Header("X-RateLimit-Reset").value_or("-1"));
    EXPECT_GT(reset, 0) << r.DebugString();
    EXPECT_LE(reset, 60);
    if (r.status == 200) {
      ++ok;
      // No previous window: floor(6 - count).
      EXPECT_EQ(r.Header("X-RateLimit-Remaining").value_or(""), std::to_string(6 - ok));
    } else {
      ++rejected;
      EXPECT_EQ(r.status, 429) << r.DebugString();
      EXPECT_EQ(r.Header("X-RateLimit-Remaining").value_or(""), "0");
    }
  }
  EXPECT_EQ(ok, 6);
  EXPECT_EQ(rejected, 4);
  // APISIX's sliding layout: plugin-limit-count:<route key>:<conf crc>:<key>.<window>.counter,
  // counting admitted requests only, expiring two windows after it opened.
  std::string key = redis_.Command({"KEYS", "plugin-limit-count:*"});
  const std::string suffix = ":carol." + std::to_string(window) + ".counter";
  EXPECT_EQ(key.rfind("plugin-limit-count:/apisix/routes/r1:", 0), 0u) << key;
  ASSERT_GT(key.size(), suffix.size());
  EXPECT_EQ(key.substr(key.size() - suffix.size()), suffix) << key;
  EXPECT_EQ(redis_.Command({"GET", key}), "6");
  int ttl = std::stoi(redis_.Command({"TTL", key}));
  EXPECT_GT(ttl, 90);
  EXPECT_LE(ttl, 120);
  // A window APISIX counted in, on the same layout: 5 of 6 used, one left for Turnpike.
  const std::string dan =
      key.substr(0, key.size() - suffix.size()) + ":dan." + std::to_string(window) + ".counter";
  redis_.Command({"SET", dan, "5", "EX", "120"});
  HttpResponse r = Send("/hello", {{"X-User", "dan"}});
  EXPECT_EQ(r.status, 200) << r.DebugString();
  EXPECT_EQ(r.Header("X-RateLimit-Remaining").value_or(""), "0");
  EXPECT_EQ(Send("/hello", {{"X-User", "dan"}}).status, 429);
  EXPECT_EQ(redis_.Command({"GET", dan}), "6");
}

TEST_F(LimitCountRedisTest, SlidingWithRedisDownFailsClosedOrDegrades) {
  ASSERT_NO_FATAL_FAILURE(StartGateway(
      gw_,
      Routes("routes:" +
             RedisRoute("strict", "/hello", "        count: 100\n        window_type: sliding\n") +
             RedisRoute("lenient", "/status/200",
                        "        count: 100\n        window_type: sliding\n"
                        "        allow_degradation: true\n") +
             "#END\n")));
  EXPECT_EQ(Send("/hello").status, 200);
  redis_.Kill();
  HttpResponse r = Send("/hello");
  EXPECT_EQ(r.status, 500) << r.DebugString();
  EXPECT_EQ(r.body, "{\"error_msg\":\"failed to limit count\"}\n");
  r = Send("/status/200");
  EXPECT_EQ(r.status, 200) << r.DebugString();
  EXPECT_FALSE(r.HasHeader("X-RateLimit-Limit"));
  ASSERT_TRUE(redis_.Start()) << redis_.error();
  EXPECT_TRUE(PollUntil([&] { return Send("/hello").status == 200; }, seconds(12)));
}

TEST_F(LimitCountRedisTest, SlidingThroughTheMasterASentinelNames) {
  testing::RedisServer sentinel;
  ASSERT_TRUE(sentinel.StartSentinel(redis_.port(), "mymaster")) << sentinel.error();
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, Routes(R"(
routes:
  - id: s2
    uri: /hello
    upstream: {A}
    plugins:
      limit-count:
        count: 2
        time_window: 60
        window_type: sliding
        key_type: constant
        key: all
        policy: redis-sentinel
        redis_sentinels: [{host: 127.0.0.1, port: )" +
                                                   std::to_string(sentinel.port()) + R"(}]
        redis_master_name: mymaster
        redis_read_timeout: 300
#END
)")));
  const int64_t window = SlidingWindowNow(seconds(20));
  EXPECT_EQ(Send("/hello").status, 200);
  HttpResponse r = Send("/hello");
  EXPECT_EQ(r.status, 200) << r.DebugString();
  EXPECT_EQ(r.Header("X-RateLimit-Remaining").value_or(""), "0");
  EXPECT_EQ(Send("/hello").status, 503);  // rejected_code's default
  std::string key = redis_.Command({"KEYS", "plugin-limit-count:/apisix/*"});
  const std::string suffix = ":all." + std::to_string(window) + ".counter";
  ASSERT_GT(key.size(), suffix.size()) << key;
  EXPECT_EQ(key.substr(key.size() - suffix.size()), suffix) << key;
  EXPECT_EQ(redis_.Command({"GET", key}), "2");
}

// policy: redis-sentinel: the master a real sentinel names, and the new one after a failover.
TEST_F(LimitCountRedisTest, SentinelNamesTheMasterAndAFailoverMovesIt) {
  testing::RedisServer replica;
  ASSERT_TRUE(replica.Start({"--replicaof", "127.0.0.1", std::to_string(redis_.port())}))
      << replica.error();
  testing::RedisServer sentinel;
  ASSERT_TRUE(sentinel.StartSentinel(redis_.port(), "mymaster")) << sentinel.error();
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, Routes(R"(
routes:
  - id: s1
    uri: /hello
    upstream: {A}
    plugins:
      limit-count:
        count: 100
        time_window: 60
        key_type: constant
        key: all
        policy: redis-sentinel
        redis_sentinels: [{host: 127.0.0.1, port: )" +
                                                   std::to_string(sentinel.port()) + R"(}]
        redis_master_name: mymaster
        redis_read_timeout: 300
#END
)")));
  for (int i = 1; i <= 3; ++i) {
    HttpResponse r = Send("/hello");
    ASSERT_EQ(r.status, 200) << r.DebugString();
    EXPECT_EQ(r.Header("X-RateLimit-Remaining").value_or(""), std::to_string(100 - i));
  }
  std::string key = redis_.Command({"KEYS", "plugin-limit-count:v1:*"});
  EXPECT_EQ(redis_.Command({"GET", key}), "3");  // on the master
  // The master dies; the sentinel promotes the replica (which has the count).
  redis_.Kill();
  bool promoted =
      PollUntil([&] { return replica.Command({"ROLE"}).rfind("master", 0) == 0; }, seconds(20));
  ASSERT_TRUE(promoted) << replica.Command({"ROLE"});
  auto served = [&] {
    for (int i = 0; i < 4; ++i) {
      if (Send("/hello").status != 200) return false;
    }
    return true;
  };
  EXPECT_TRUE(PollUntil(served, seconds(15)));
  int count = std::stoi(replica.Command({"GET", key}));
  EXPECT_GT(count, 3);  // counting went on, on the new master
}

// policy: redis-cluster, against a real three-master Redis Cluster on loopback.
class LimitCountClusterTest : public LimitCountTest {
 protected:
  void SetUp() override {
    LimitCountTest::SetUp();
    if (!testing::RedisServer::Available()) GTEST_SKIP() << "redis-server is not installed";
    ASSERT_TRUE(cluster_.Start()) << cluster_.error();
  }
  // One route item limited through the cluster per X-User; `fields` are more limit-count
  // lines (each "        name: value\n").
  std::string ClusterRoute(const std::string& id, const std::string& uri,
                           const std::string& fields) {
    std::string nodes;
    for (const std::string& a : cluster_.Addresses()) nodes += (nodes.empty() ? "" : ", ") + a;
    return "\n  - id: " + id + "\n    uri: " + uri +
           "\n    upstream: {A}\n    plugins:\n      limit-count:\n        time_window: 60\n"
           "        key: http_x_user\n        rejected_code: 429\n"
           "        policy: redis-cluster\n        redis_cluster_name: test\n"
           "        redis_cluster_nodes: [" +
           nodes + "]\n        redis_timeout: 300\n" + fields;
  }
  // The limit-count keys each node holds.
  std::vector<std::vector<std::string>> KeysByNode(
      const std::string& pattern = "plugin-limit-count:v1:*") {
    std::vector<std::vector<std::string>> out;
    for (int i = 0; i < cluster_.size(); ++i) {
      out.emplace_back();
      std::string keys = cluster_.node(i).Command({"KEYS", pattern});
      size_t at = 0;
      while (at < keys.size()) {
        size_t end = keys.find('\n', at);
        if (end == std::string::npos) end = keys.size();
        if (end > at) out.back().push_back(keys.substr(at, end - at));
        at = end + 1;
      }
    }
    return out;
  }

  testing::RedisCluster cluster_;
};

TEST_F(LimitCountClusterTest, TwoGatewaysShareLimitsOnEveryMaster) {
  const std::string routes =
      Routes("routes:" + ClusterRoute("c1", "/hello", "        count: 3\n") + "#END\n");
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, routes));
  Turnpike second{kTurnpikeBin};
  ASSERT_NO_FATAL_FAILURE(StartGateway(second, routes));
  constexpr int kUsers = 12;
  for (int u = 0; u < kUsers; ++u) {
    int ok = 0;
    for (int i = 0; i < 5; ++i) {
      HttpRequest req;
      req.target = "/hello";
      req.headers = {{"X-User", "user" + std::to_string(u)}};
      HttpResponse r = Fetch(i % 2 == 0 ? gw_.port() : second.port(), req);
      if (r.status == 200) {
        ++ok;
        EXPECT_EQ(r.Header("X-RateLimit-Remaining").value_or(""), std::to_string(3 - ok));
      } else {
        EXPECT_EQ(r.status, 429) << r.DebugString();
      }
    }
    EXPECT_EQ(ok, 3) << "user" << u;
  }
  // APISIX's keys, each on the master of its slot, each counting every request.
  int total = 0;
  int masters_used = 0;
  std::vector<std::vector<std::string>> by_node = KeysByNode();
  for (int n = 0; n < cluster_.size(); ++n) {
    masters_used += by_node[static_cast<size_t>(n)].empty() ? 0 : 1;
    for (const std::string& key : by_node[static_cast<size_t>(n)]) {
      ++total;
      EXPECT_EQ(key.rfind("plugin-limit-count:v1:/apisix/routes/c1:", 0), 0u) << key;
      EXPECT_EQ(cluster_.OwnerOf(cluster_.Slot(key)), n) << key;
      EXPECT_EQ(cluster_.node(n).Command({"GET", key}), "5") << key;
    }
  }
  EXPECT_EQ(total, kUsers);
  EXPECT_GE(masters_used, 2);  // twelve keys on one master of three: (1/3)^11
}

TEST_F(LimitCountClusterTest, TwoGatewaysShareSlidingWindowsAcrossMasters) {
  const std::string routes = Routes(
      "routes:" + ClusterRoute("c1", "/hello", "        count: 3\n        window_type: sliding\n") +
      "#END\n");
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, routes));
  Turnpike second{kTurnpikeBin};
  ASSERT_NO_FATAL_FAILURE(StartGateway(second, routes));
  const int64_t window = SlidingWindowNow(seconds(20));
  constexpr int kUsers = 8;
  for (int u = 0; u < kUsers; ++u) {
    int ok = 0;
    for (int i = 0; i < 5; ++i) {
      HttpRequest req;
      req.target = "/hello";
      req.headers = {{"X-User", "user" + std::to_string(u)}};
      HttpResponse r = Fetch(i % 2 == 0 ? gw_.port() : second.port(), req);
      if (r.status == 200) {
        ++ok;
        EXPECT_EQ(r.Header("X-RateLimit-Remaining").value_or(""), std::to_string(3 - ok));
      } else {
        EXPECT_EQ(r.status, 429) << r.DebugString();
      }
    }
    EXPECT_EQ(ok, 3) << "user" << u;
  }
  // Each user's counter on the master of its slot, holding the admitted requests only.
  int total = 0;
  std::vector<std::vector<std::string>> by_node = KeysByNode("plugin-limit-count:/apisix/*");
  for (int n = 0; n < cluster_.size(); ++n) {
    for (const std::string& key : by_node[static_cast<size_t>(n)]) {
      ++total;
      EXPECT_EQ(key.rfind("plugin-limit-count:/apisix/routes/c1:", 0), 0u) << key;
      const std::string suffix = "." + std::to_string(window) + ".counter";
      EXPECT_EQ(key.substr(key.size() - suffix.size()), suffix) << key;
      EXPECT_EQ(cluster_.OwnerOf(cluster_.Slot(key)), n) << key;
      EXPECT_EQ(cluster_.node(n).Command({"GET", key}), "3") << key;
    }
  }
  EXPECT_EQ(total, kUsers);
}

TEST_F(LimitCountClusterTest, AMovedSlotIsFollowedThroughTheDaemon) {
  ASSERT_NO_FATAL_FAILURE(StartGateway(
      gw_, Routes("routes:" + ClusterRoute("c1", "/hello", "        count: 100\n") + "#END\n")));
  Headers user = {{"X-User", "erin"}};
  for (int i = 1; i <= 4; ++i) {
    HttpResponse r = Send("/hello", user);  // both workers learn where the key lives
    ASSERT_EQ(r.status, 200) << r.DebugString();
    EXPECT_EQ(r.Header("X-RateLimit-Remaining").value_or(""), std::to_string(100 - i));
  }
  std::string key;
  for (const std::vector<std::string>& keys : KeysByNode()) {
    if (!keys.empty()) key = keys.front();
  }
  ASSERT_FALSE(key.empty());
  const int slot = cluster_.Slot(key);
  const int to = (cluster_.OwnerOf(slot) + 1) % cluster_.size();
  ASSERT_TRUE(cluster_.BeginMigration(slot, to)) << cluster_.error();
  ASSERT_TRUE(cluster_.MoveKey(slot, key)) << cluster_.error();
  for (int i = 5; i <= 6; ++i) {  // -ASK: the old owner has let the key go
    HttpResponse r = Send("/hello", user);
    ASSERT_EQ(r.status, 200) << r.DebugString();
    EXPECT_EQ(r.Header("X-RateLimit-Remaining").value_or(""), std::to_string(100 - i));
  }
  ASSERT_TRUE(cluster_.FinishMigration(slot)) << cluster_.error();
  for (int i = 7; i <= 10; ++i) {  // -MOVED, then the new owner directly
    HttpResponse r = Send("/hello", user);
    ASSERT_EQ(r.status, 200) << r.DebugString();
    EXPECT_EQ(r.Header("X-RateLimit-Remaining").value_or(""), std::to_string(100 - i));
  }
  EXPECT_EQ(cluster_.node(to).Command({"GET", key}), "10");
}

TEST_F(LimitCountClusterTest, AMasterDownFailsClosedOrDegradesAndRecovers) {
  ASSERT_NO_FATAL_FAILURE(StartGateway(
      gw_, Routes("routes:" + ClusterRoute("strict", "/hello", "        count: 100\n") +
                  ClusterRoute("lenient", "/status/200",
                               "        count: 100\n        allow_degradation: true\n") +
                  "#END\n")));
  Headers user = {{"X-User", "frank"}};
  ASSERT_EQ(Send("/hello", user).status, 200);
  ASSERT_EQ(Send("/status/200", user).status, 200);
  // Down go the masters of both keys (one or two nodes).
  std::vector<int> killed;
  std::vector<std::vector<std::string>> by_node = KeysByNode();
  for (int n = 0; n < cluster_.size(); ++n) {
    if (by_node[static_cast<size_t>(n)].empty()) continue;
    cluster_.Kill(n);
    killed.push_back(n);
  }
  ASSERT_FALSE(killed.empty());
  HttpResponse r = Send("/hello", user);
  EXPECT_EQ(r.status, 500) << r.DebugString();
  EXPECT_EQ(r.body, "{\"error_msg\":\"failed to limit count\"}\n");
  r = Send("/status/200", user);
  EXPECT_EQ(r.status, 200) << r.DebugString();  // allow_degradation lets it through
  EXPECT_FALSE(r.HasHeader("X-RateLimit-Limit"));
  for (int n : killed) ASSERT_TRUE(cluster_.Restart(n)) << cluster_.error();
  // Back within the reconnect back-off (at most 5 s), on both workers.
  auto all_counted = [&] {
    for (int i = 0; i < 6; ++i) {
      HttpResponse ok = Send("/hello", user);
      if (ok.status != 200 || ok.Header("X-RateLimit-Limit").value_or("") != "100") return false;
    }
    return true;
  };
  EXPECT_TRUE(PollUntil(all_counted, seconds(12)));
}

TEST_F(LimitCountClusterTest, DelayedSyncFlushesThroughTheCluster) {
  ASSERT_NO_FATAL_FAILURE(StartGateway(
      gw_, Routes("routes:" +
                  ClusterRoute("c1", "/hello", "        count: 100\n        sync_interval: 0.2\n") +
                  "#END\n")));
  for (int u = 0; u < 6; ++u) {
    for (int i = 0; i < 10; ++i) {
      HttpResponse r = Send("/hello", {{"X-User", "sync" + std::to_string(u)}});
      ASSERT_EQ(r.status, 200) << r.DebugString();
    }
  }
  // Each key's counts reach the master of its slot within a few intervals.
  auto flushed = [&] {
    int keys = 0;
    std::vector<std::vector<std::string>> by_node = KeysByNode();
    for (int n = 0; n < cluster_.size(); ++n) {
      for (const std::string& key : by_node[static_cast<size_t>(n)]) {
        if (cluster_.node(n).Command({"GET", key}) != "10") return false;
        ++keys;
      }
    }
    return keys == 6;
  };
  EXPECT_TRUE(PollUntil(flushed, seconds(5)));
}

TEST_F(LimitCountClusterTest, DelayedSlidingSyncFlushesThroughTheCluster) {
  ASSERT_NO_FATAL_FAILURE(
      StartGateway(gw_, Routes("routes:" +
                               ClusterRoute("c1", "/hello",
                                            "        count: 100\n        window_type: sliding\n"
                                            "        sync_interval: 0.2\n") +
                               "#END\n")));
  const int64_t window = SlidingWindowNow(seconds(20));
  for (int u = 0; u < 6; ++u) {
    for (int i = 1; i <= 10; ++i) {
      HttpResponse r = Send("/hello", {{"X-User", "sync" + std::to_string(u)}});
      ASSERT_EQ(r.status, 200) << r.DebugString();
      EXPECT_EQ(r.Header("X-RateLimit-Remaining").value_or(""), std::to_string(100 - i));
    }
  }
  // Each key's window counter holds its 10 on the master of its slot within a few intervals
  // (the first request's by the synchronous script, the rest by the flush).
  const std::string suffix = "." + std::to_string(window) + ".counter";
  auto flushed = [&] {
    int keys = 0;
    std::vector<std::vector<std::string>> by_node = KeysByNode("plugin-limit-count:/apisix/*");
    for (int n = 0; n < cluster_.size(); ++n) {
      for (const std::string& key : by_node[static_cast<size_t>(n)]) {
        if (key.size() < suffix.size() || key.substr(key.size() - suffix.size()) != suffix) {
          return false;
        }
        if (cluster_.OwnerOf(cluster_.Slot(key)) != n) return false;
        if (cluster_.node(n).Command({"GET", key}) != "10") return false;
        ++keys;
      }
    }
    return keys == 6;
  };
  EXPECT_TRUE(PollUntil(flushed, seconds(5)));
}

}  // namespace
}  // namespace turnpike::itest
