// limit-count with sync_interval (delayed sync) through the real daemon against a real
// redis-server on loopback: two gateways on one Redis hold the limit within the documented
// slack while Redis sees one call per key and interval, not one per request; counts admitted
// while Redis is down reach it once it is back; a reload keeps the local state, and an
// instance that goes away hands its unsent counts to Redis. With window_type sliding: two
// gateways converge on one limit and Redis ends up holding exactly the admitted requests in
// APISIX's layout, the previous window's count weighs on the next one's local decisions, and
// Redis down keeps a key's view of its window (a key that must ask fails or degrades).

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "integration/itest.h"
#include "support/redis.h"

namespace turnpike::itest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

int64_t WallMs() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Sleeps until `into_ms` into the next sliding window of `window_ms` (aligned to the wall
// clock, as the gateway aligns them) and answers its id.
int64_t SleepIntoNextWindow(int64_t window_ms, int64_t into_ms) {
  int64_t now = WallMs();
  std::this_thread::sleep_for(milliseconds(window_ms - now % window_ms + into_ms));
  return WallMs() / window_ms;
}

// The current window's id, after waiting for the next window when less than `margin_ms` is
// left of this one: a test that must stay in one window does not straddle two.
int64_t WindowWithMargin(int64_t window_ms, int64_t margin_ms) {
  if (window_ms - WallMs() % window_ms < margin_ms) return SleepIntoNextWindow(window_ms, 50);
  return WallMs() / window_ms;
}

class LimitCountSyncTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backends_ = StartBackends({"A"}); }
  static void TearDownTestSuite() { backends_.clear(); }
  void SetUp() override {
    ASSERT_EQ(backends_.size(), 1u) << "backend did not start";
    if (!testing::RedisServer::Available()) GTEST_SKIP() << "redis-server is not installed";
    ASSERT_TRUE(redis_.Start()) << redis_.error();
  }

  // /hello limited through Redis with a delayed sync; `fields` are more limit-count lines.
  std::string Route(const std::string& fields) {
    return "\n  - id: r1\n    uri: /hello\n    upstream: {A}\n    plugins:\n      limit-count:\n"
           "        time_window: 60\n        policy: redis\n        redis_host: 127.0.0.1\n"
           "        redis_port: " +
           std::to_string(redis_.port()) + "\n        redis_timeout: 300\n" +
           "        rejected_code: 429\n" + fields;
  }
  // One route item with a sliding window of `window_s` through Redis with a delayed sync.
  std::string SlidingItem(const std::string& id, const std::string& uri, int window_s,
                          const std::string& fields) {
    return "\n  - id: " + id + "\n    uri: " + uri +
           "\n    upstream: {A}\n    plugins:\n      limit-count:\n        time_window: " +
           std::to_string(window_s) +
           "\n        window_type: sliding\n        policy: redis\n"
           "        redis_host: 127.0.0.1\n        redis_port: " +
           std::to_string(redis_.port()) +
           "\n        redis_timeout: 300\n        rejected_code: 429\n"
           "        key: http_x_user\n" +
           fields;
  }
  // The value of the only key matching `pattern` ("" when there is none or several).
  std::string ValueOf(const std::string& pattern) {
    std::string key = redis_.Command({"KEYS", pattern});
    if (key.empty() || key.find('\n') != std::string::npos) return "";
    return redis_.Command({"GET", key});
  }
  std::string Routes(const std::string& routes) {
    return Fill("routes:" + routes + "#END\n",
                {{"A", "{nodes: [" + Node(backends_[0]->port()) + "]}"}});
  }
  static HttpResponse Get(int port, const Headers& headers = {}) {
    HttpRequest req;
    req.target = "/hello";
    req.headers = headers;
    return Fetch(port, req);
  }
  // Script calls Redis has run (EVALSHA and EVAL), from INFO commandstats.
  int ScriptCalls() {
    std::string info = redis_.Command({"INFO", "commandstats"});
    int total = 0;
    for (const char* name : {"cmdstat_evalsha:calls=", "cmdstat_eval:calls="}) {
      size_t at = info.find(name);
      if (at != std::string::npos) total += std::stoi(info.substr(at + std::strlen(name)));
    }
    return total;
  }
  // The value of the only limit-count key ("" when there is none).
  std::string CounterValue() {
    std::string key = redis_.Command({"KEYS", "plugin-limit-count:v1:*"});
    if (key.empty() || key.find('\n') != std::string::npos) return "";
    return redis_.Command({"GET", key});
  }

  static inline std::vector<std::unique_ptr<Backend>> backends_;
  testing::RedisServer redis_;
  Turnpike gw_{kTurnpikeBin};
};

TEST_F(LimitCountSyncTest, TwoGatewaysHoldTheLimitWithinTheSlackWithFewRedisCalls) {
  constexpr int kCount = 100;
  constexpr int kRequests = 300;
  const std::string routes =
      Routes(Route("        count: " + std::to_string(kCount) +
                   "\n        key: http_x_user\n        sync_interval: 0.2\n"));
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, routes));
  Turnpike second{kTurnpikeBin};
  ASSERT_NO_FATAL_FAILURE(StartGateway(second, routes));
  ASSERT_EQ(redis_.Command({"CONFIG", "RESETSTAT"}), "OK");
  // `user`'s requests alternating between the gateways, `pause` apart: how many pass.
  auto run = [&](const std::string& user, milliseconds pause) {
    int admitted = 0;
    int last_remaining[2] = {kCount, kCount};
    for (int i = 0; i < kRequests; ++i) {
      HttpResponse r = Get(i % 2 == 0 ? gw_.port() : second.port(), {{"X-User", user}});
      EXPECT_TRUE(r.status == 200 || r.status == 429) << r.DebugString();
      EXPECT_EQ(r.Header("X-RateLimit-Limit").value_or(""), std::to_string(kCount));
      int remaining = std::stoi(r.Header("X-RateLimit-Remaining").value_or("-1"));
      int reset = std::stoi(r.Header("X-RateLimit-Reset").value_or("-1"));
      EXPECT_GE(reset, 0);
      EXPECT_LE(reset, 60);
      if (r.status == 200) {
        ++admitted;
        // A gateway's local view only goes down (a sync brings in the other's counts).
        EXPECT_LT(remaining, last_remaining[i % 2]) << i;
        last_remaining[i % 2] = remaining;
      } else {
        EXPECT_EQ(remaining, 0);
      }
      if (pause.count() > 0) std::this_thread::sleep_for(pause);
    }
    return admitted;
  };
  // A burst inside one interval: each gateway decides alone on what remained at its last
  // sync, the documented worst case: at most (G - 1) x count over the limit with G = 2.
  int burst = run("burst", milliseconds(0));
  EXPECT_GE(burst, kCount);
  EXPECT_LE(burst, 2 * kCount);
  // Spread over many intervals, each sync brings the other gateway's counts in: the
  // overshoot is what one gateway admits in about one interval (here ~20).
  int paced = run("paced", milliseconds(5));
  EXPECT_GE(paced, kCount);
  EXPECT_LE(paced, kCount + kCount / 2);
  // Once both have synced, the limit holds on both.
  std::this_thread::sleep_for(milliseconds(600));
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(Get(i % 2 == 0 ? gw_.port() : second.port(), {{"X-User", "paced"}}).status, 429);
  }
  int calls = ScriptCalls();
  EXPECT_LT(calls, 2 * kRequests / 5) << "one call per key per interval, not per request";
  EXPECT_GE(calls, 4);  // at least each gateway's first request of each user
  // Redis holds every admitted request (plus first asks that Redis itself refused).
  int stored = 0;
  for (const char* user : {"burst", "paced"}) {
    std::string key = redis_.Command({"KEYS", std::string("plugin-limit-count:v1:*:") + user});
    stored += std::stoi(redis_.Command({"GET", key}));
  }
  EXPECT_GE(stored, burst + paced);
  EXPECT_LE(stored, burst + paced + 4);
  RecordProperty("burst_admitted", burst);
  RecordProperty("paced_admitted", paced);
  RecordProperty("script_calls", calls);
}

TEST_F(LimitCountSyncTest, CountsAdmittedWhileRedisIsDownReachItWhenItIsBack) {
  ASSERT_NO_FATAL_FAILURE(StartGateway(
      gw_, Routes(Route("        count: 1000\n        key_type: constant\n        key: all\n"
                        "        sync_interval: 0.1\n"))));
  ASSERT_EQ(Get(gw_.port()).status, 200);  // the quota is known from here on
  EXPECT_EQ(CounterValue(), "1");
  redis_.Kill();
  for (int i = 0; i < 10; ++i) {
    HttpResponse r = Get(gw_.port());
    EXPECT_EQ(r.status, 200) << r.DebugString();  // decided locally: no Redis needed
  }
  std::this_thread::sleep_for(milliseconds(500));  // a few failed syncs
  ASSERT_TRUE(redis_.Start()) << redis_.error();   // an empty server (no persistence)
  // Within the reconnect back-off (at most 5 s) the kept delta arrives, whole.
  EXPECT_TRUE(PollUntil([&] { return CounterValue() == "10"; }, seconds(12))) << CounterValue();
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(CounterValue(), "10");  // and only once
}

TEST_F(LimitCountSyncTest, AReloadKeepsTheLocalStateAndAReplacedInstanceHandsItOver) {
  // A long interval: between syncs only the process knows the admitted requests.
  const std::string limited =
      Route("        count: 5\n        key: http_x_user\n        sync_interval: 10\n");
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, Routes(limited)));
  Headers erin = {{"X-User", "erin"}};
  for (int i = 1; i <= 3; ++i) {
    HttpResponse r = Get(gw_.port(), erin);
    ASSERT_EQ(r.status, 200) << r.DebugString();
    EXPECT_EQ(r.Header("X-RateLimit-Remaining").value_or(""), std::to_string(5 - i));
  }
  EXPECT_EQ(CounterValue(), "1");  // the first request's sync; the other two are local
  // Another route: the limited instance is kept, with its state.
  ASSERT_TRUE(gw_.RewriteRoutes(Routes(limited + "\n  - id: other\n    uri: /status/201\n"
                                                 "    upstream: {A}\n")));
  ASSERT_TRUE(gw_.Reload());
  ASSERT_TRUE(PollUntil(
      [&] {
        HttpRequest req;
        req.target = "/status/201";
        return Fetch(gw_.port(), req).status == 201;
      },
      seconds(5)));
  HttpResponse r = Get(gw_.port(), erin);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("X-RateLimit-Remaining").value_or(""), "1");
  // plugin_metadata changes: the instance is replaced (same counter identity); the old one
  // sends its unsent counts at once instead of at the end of its interval.
  ASSERT_TRUE(gw_.RewriteRoutes(
      "plugin_metadata:\n  - id: limit-count\n    remaining_header: X-Left\n" + Routes(limited)));
  ASSERT_TRUE(gw_.Reload());
  EXPECT_TRUE(PollUntil([&] { return CounterValue() == "4"; }, seconds(5))) << CounterValue();
  ASSERT_TRUE(PollUntil([&] { return Get(gw_.port(), erin).HasHeader("X-Left"); }, seconds(5)));
  // That poll's request asked Redis (the key's quota was marked stale) and took the last one.
  r = Get(gw_.port(), erin);
  EXPECT_EQ(r.status, 429) << r.DebugString();
  EXPECT_EQ(r.Header("X-Left").value_or(""), "0");
}

TEST_F(LimitCountSyncTest, ATemplatedWindowNoLongerThanTheIntervalAsksRedisEveryTime) {
  // APISIX's fallback: a time_window that resolves to sync_interval or less is counted by
  // the direct call, every request; a longer one is decided locally after the first.
  ASSERT_NO_FATAL_FAILURE(StartGateway(
      gw_, Routes("\n  - id: r1\n    uri: /hello\n    upstream: {A}\n    plugins:\n"
                  "      limit-count:\n        count: 100\n        time_window: $http_x_window\n"
                  "        key: http_x_user\n        policy: redis\n"
                  "        redis_host: 127.0.0.1\n        redis_port: " +
                  std::to_string(redis_.port()) + "\n        sync_interval: 2\n")));
  ASSERT_EQ(redis_.Command({"CONFIG", "RESETSTAT"}), "OK");
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(Get(gw_.port(), {{"X-User", "short"}, {"X-Window", "2"}}).status, 200);
  }
  EXPECT_EQ(ScriptCalls(), 5);
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(Get(gw_.port(), {{"X-User", "long"}, {"X-Window", "60"}}).status, 200);
  }
  EXPECT_EQ(ScriptCalls(), 6);  // the flush is 2 s away
}

TEST_F(LimitCountSyncTest, SlidingGatewaysConvergeAndRedisHoldsEveryAdmittedRequest) {
  constexpr int kCount = 100;
  constexpr int kRequests = 300;
  const std::string routes = Routes(
      SlidingItem("r1", "/hello", 60,
                  "        count: " + std::to_string(kCount) + "\n        sync_interval: 0.2\n"));
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, routes));
  Turnpike second{kTurnpikeBin};
  ASSERT_NO_FATAL_FAILURE(StartGateway(second, routes));
  ASSERT_EQ(redis_.Command({"CONFIG", "RESETSTAT"}), "OK");
  const int64_t window = WindowWithMargin(60'000, 25'000);
  int admitted = 0;
  int last_remaining[2] = {kCount, kCount};
  for (int i = 0; i < kRequests; ++i) {
    HttpResponse r = Get(i % 2 == 0 ? gw_.port() : second.port(), {{"X-User", "paced"}});
    ASSERT_TRUE(r.status == 200 || r.status == 429) << r.DebugString();
    EXPECT_EQ(r.Header("X-RateLimit-Limit").value_or(""), std::to_string(kCount));
    int remaining = std::stoi(r.Header("X-RateLimit-Remaining").value_or("-1"));
    double reset = std::stod(r.Header("X-RateLimit-Reset").value_or("-1"));
    EXPECT_GE(reset, 0);
    EXPECT_LE(reset, 60);
    if (r.status == 200) {
      ++admitted;
      // No previous window: floor(count - seen); a gateway's view only goes down.
      EXPECT_LT(remaining, last_remaining[i % 2]) << i;
      last_remaining[i % 2] = remaining;
    } else {
      EXPECT_EQ(remaining, 0);
    }
    std::this_thread::sleep_for(milliseconds(5));
  }
  // Each sync brings the other gateway's counts in: the overshoot is what one gateway admits
  // in about one interval.
  EXPECT_GE(admitted, kCount);
  EXPECT_LE(admitted, kCount + kCount / 2);
  // Within a few intervals Redis holds every admitted request (asks that Redis refused are
  // not counted, as APISIX's sliding script does not count them), in APISIX's layout.
  const std::string counter =
      "plugin-limit-count:/apisix/routes/r1:*:paced." + std::to_string(window) + ".counter";
  EXPECT_TRUE(PollUntil([&] { return ValueOf(counter) == std::to_string(admitted); }, seconds(2)))
      << ValueOf(counter) << " of " << admitted;
  // Once both have synced, the limit holds on both.
  std::this_thread::sleep_for(milliseconds(500));
  for (int i = 0; i < 10; ++i) {
    HttpResponse r = Get(i % 2 == 0 ? gw_.port() : second.port(), {{"X-User", "paced"}});
    EXPECT_EQ(r.status, 429) << r.DebugString();
  }
  EXPECT_EQ(ValueOf(counter), std::to_string(admitted));
  int calls = ScriptCalls();
  EXPECT_LT(calls, kRequests / 5) << "one call per key per interval, not per request";
  EXPECT_GE(calls, 2);  // at least each gateway's first request
  RecordProperty("sliding_admitted", admitted);
  RecordProperty("script_calls", calls);
}

TEST_F(LimitCountSyncTest, SlidingPreviousWindowWeighsOnTheNextOnesLocalDecisions) {
  // 4 s windows, 10 requests each: the previous window's share drops by one every 400 ms.
  ASSERT_NO_FATAL_FAILURE(StartGateway(
      gw_,
      Routes(SlidingItem("r1", "/hello", 4, "        count: 10\n        sync_interval: 0.5\n"))));
  Headers edge = {{"X-User", "edge"}};
  const int64_t first = SleepIntoNextWindow(4'000, 30);
  for (int i = 1; i <= 10; ++i) {
    HttpResponse r = Get(gw_.port(), edge);
    ASSERT_EQ(r.status, 200) << i << r.DebugString();
    EXPECT_EQ(r.Header("X-RateLimit-Remaining").value_or(""), std::to_string(10 - i));
  }
  HttpResponse r = Get(gw_.port(), edge);
  EXPECT_EQ(r.status, 429) << r.DebugString();
  const std::string prefix = "plugin-limit-count:/apisix/routes/r1:*:edge.";
  // The 9 decided locally reach the window's counter with the flush, before it ends.
  EXPECT_TRUE(PollUntil(
      [&] { return ValueOf(prefix + std::to_string(first) + ".counter") == "10"; }, seconds(2)));
  // 1.8 s into the next window, 2.2 s left: the previous window weighs 10 x 2.2 / 4 = 5.5,
  // so 5 fit (5 + 5.5 >= 10 rejects the sixth), whether decided by Redis (the first, for
  // the new window) or locally.
  ASSERT_EQ(SleepIntoNextWindow(4'000, 1'800), first + 1);
  for (int i = 1; i <= 5; ++i) {
    r = Get(gw_.port(), edge);
    ASSERT_EQ(r.status, 200) << i << r.DebugString();
    // floor(10 - i - 5.5 or a little less)
    EXPECT_EQ(r.Header("X-RateLimit-Remaining").value_or(""), std::to_string(i < 5 ? 4 - i : 0))
        << i;
    double reset = std::stod(r.Header("X-RateLimit-Reset").value_or("-1"));
    EXPECT_GT(reset, 1.9);  // the window's end, rounded up
    EXPECT_LE(reset, 2.2);
  }
  r = Get(gw_.port(), edge);
  EXPECT_EQ(r.status, 429) << r.DebugString();
  EXPECT_EQ(r.Header("X-RateLimit-Remaining").value_or(""), "0");
  // Until the share lets one more in: 2.2 s - 5 / (10 per 4 s) = 0.2 s, or a little less.
  double reset = std::stod(r.Header("X-RateLimit-Reset").value_or("-1"));
  EXPECT_GT(reset, 0);
  EXPECT_LE(reset, 0.4);
  EXPECT_TRUE(PollUntil(
      [&] { return ValueOf(prefix + std::to_string(first + 1) + ".counter") == "5"; }, seconds(2)));
}

TEST_F(LimitCountSyncTest, SlidingWithRedisDownKeepsAViewAndFailsOrDegradesWithout) {
  const std::string fields = "        count: 1000\n        sync_interval: 0.1\n";
  ASSERT_NO_FATAL_FAILURE(
      StartGateway(gw_, Routes(SlidingItem("strict", "/hello", 60, fields) +
                               SlidingItem("lenient", "/status/200", 60,
                                           fields + "        allow_degradation: true\n"))));
  const int64_t window = WindowWithMargin(60'000, 25'000);
  ASSERT_EQ(Get(gw_.port(), {{"X-User", "known"}}).status, 200);  // the view of this window
  const std::string counter =
      "plugin-limit-count:/apisix/routes/strict:*:known." + std::to_string(window) + ".counter";
  EXPECT_EQ(ValueOf(counter), "1");
  redis_.Kill();
  for (int i = 0; i < 10; ++i) {
    HttpResponse r = Get(gw_.port(), {{"X-User", "known"}});
    EXPECT_EQ(r.status, 200) << r.DebugString();  // decided on the view: no Redis needed
    EXPECT_EQ(r.Header("X-RateLimit-Remaining").value_or(""), std::to_string(998 - i));
  }
  // A key without a view has to ask: "failed to limit count", or through when degrading.
  HttpResponse r = Get(gw_.port(), {{"X-User", "new"}});
  EXPECT_EQ(r.status, 500) << r.DebugString();
  EXPECT_EQ(r.body, "{\"error_msg\":\"failed to limit count\"}\n");
  HttpRequest lenient;
  lenient.target = "/status/200";
  lenient.headers = {{"X-User", "new"}};
  r = Fetch(gw_.port(), lenient);
  EXPECT_EQ(r.status, 200) << r.DebugString();
  EXPECT_FALSE(r.HasHeader("X-RateLimit-Limit"));
  std::this_thread::sleep_for(milliseconds(500));  // a few failed syncs
  ASSERT_TRUE(redis_.Start()) << redis_.error();   // an empty server (no persistence)
  // Within the reconnect back-off (at most 5 s) the kept delta arrives, whole, in the
  // window's counter.
  EXPECT_TRUE(PollUntil([&] { return ValueOf(counter) == "10"; }, seconds(12))) << ValueOf(counter);
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(ValueOf(counter), "10");  // and only once
}

}  // namespace
}  // namespace turnpike::itest
