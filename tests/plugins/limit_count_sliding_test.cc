// limit-count's sliding window on Redis: the counters' names and the verdict's arithmetic;
// the check-and-increment script against a real redis-server (one call, both counters) and
// a real three-master Redis Cluster (the previous counter read at its own master), driven
// across a window boundary by handing the calls the time left of the window, as the plugin
// does from its clock; APISIX's data read back with redis-cli.

#include <hiredis/hiredis.h>
#include <uv.h>

#include <chrono>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/limit_count/cluster_link.h"
#include "plugins/limit_count/cluster_slot.h"
#include "plugins/limit_count/redis_link.h"
#include "plugins/limit_count/sliding_window.h"
#include "support/redis.h"
#include "support/redis_cluster.h"

namespace turnpike::plugins::limit_count {
namespace {

using turnpike::testing::RedisCluster;
using turnpike::testing::RedisServer;

TEST(SlidingWindowTest, CountersAreNamedByWallClockWindowAsApisixNamesThem) {
  std::string current;
  std::string previous;
  // 2023-11-14T22:13:20.250Z, 60 s windows: window 28333333, 39.75 s left of it.
  SlidingKeys k = MakeSlidingKeys("plugin-limit-count:/apisix/routes/1:42:10.0.0.1", 60,
                                  1'700'000'000'250, &current, &previous);
  EXPECT_EQ(k.window_id, 28333333);
  EXPECT_EQ(k.left_ms, 39'750u);
  EXPECT_EQ(current, "plugin-limit-count:/apisix/routes/1:42:10.0.0.1.28333333.counter");
  EXPECT_EQ(previous, "plugin-limit-count:/apisix/routes/1:42:10.0.0.1.28333332.counter");
  // On the boundary a whole window is left; a millisecond before it, one millisecond.
  k = MakeSlidingKeys("k", 10, 1'700'000'000'000, &current, &previous);
  EXPECT_EQ(k.left_ms, 10'000u);
  EXPECT_EQ(current, "k.170000000.counter");
  k = MakeSlidingKeys("k", 10, 1'699'999'999'999, &current, &previous);
  EXPECT_EQ(k.left_ms, 1u);
  EXPECT_EQ(current, "k.169999999.counter");
  EXPECT_EQ(previous, "k.169999998.counter");
}

TEST(SlidingWindowTest, VerdictFollowsApisixArithmetic) {
  // Admitted: floor(limit - count - previous * left / window); reset: the window's end.
  SlidingVerdict v = JudgeSliding(true, 3, 10, 10, 10, 5'000);  // 10 - 3 - 5
  EXPECT_TRUE(v.allowed);
  EXPECT_EQ(v.remaining, 2u);
  EXPECT_EQ(v.reset_cs, 500u);
  v = JudgeSliding(true, 2, 10, 10, 10, 7'501);  // 10 - 2 - 7.501 = 0.499
  EXPECT_EQ(v.remaining, 0u);
  EXPECT_EQ(v.reset_cs, 751u);                   // 7.501 s rounded up to hundredths
  v = JudgeSliding(true, 10, 0, 10, 10, 1'000);  // never below zero
  EXPECT_EQ(v.remaining, 0u);
  // The previous count is capped at the limit: 25 weighs as 10.
  v = JudgeSliding(true, 1, 25, 10, 10, 5'000);
  EXPECT_EQ(v.remaining, 4u);
  // Rejected at the limit of this window: retry when it ends.
  v = JudgeSliding(false, 10, 4, 10, 10, 3'000);
  EXPECT_FALSE(v.allowed);
  EXPECT_EQ(v.remaining, 0u);
  EXPECT_EQ(v.reset_cs, 300u);
  // Rejected by the estimate: retry once the previous window's share has shrunk by
  // (limit - count): 7500 ms - 7 / (10 / 10000 ms) = 500 ms.
  v = JudgeSliding(false, 3, 10, 10, 10, 7'500);
  EXPECT_FALSE(v.allowed);
  EXPECT_EQ(v.reset_cs, 50u);
  v = JudgeSliding(false, 5, 10, 10, 10, 5'000);  // exactly at the limit: at once
  EXPECT_EQ(v.reset_cs, 0u);
}

// [admitted, count, previous], or the error.
struct Answer {
  bool ok = false;
  int64_t admitted = -1;
  int64_t count = -1;
  int64_t previous = -1;
  std::string error;
};

class Recorder : public RedisStore::Waiter {
 public:
  void OnRedisReply(const redisReply* r, std::string_view error, uint64_t token) override {
    Answer a;
    if (r != nullptr && r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
        r->element[0]->type == REDIS_REPLY_INTEGER && r->element[1]->type == REDIS_REPLY_INTEGER &&
        r->element[2]->type == REDIS_REPLY_INTEGER) {
      a.ok = true;
      a.admitted = r->element[0]->integer;
      a.count = r->element[1]->integer;
      a.previous = r->element[2]->integer;
    } else if (r != nullptr && r->type == REDIS_REPLY_ERROR) {
      a.error = std::string(r->str, r->len);
    } else {
      a.error = error.empty() ? "unexpected reply" : std::string(error);
    }
    if (answers.size() <= token) answers.resize(token + 1);
    answers[token] = a;
    ++received;
  }
  std::vector<Answer> answers;
  size_t received = 0;
};

// A loop, a recorder and the calls, for either store.
class SlidingStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RedisServer::Available()) GTEST_SKIP() << "redis-server is not installed";
    uv_loop_init(&loop_);
    looping_ = true;
  }
  void TearDown() override {
    if (!looping_) return;
    stores_.clear();
    uv_run(&loop_, UV_RUN_NOWAIT);
    uv_loop_close(&loop_);
  }
  void RunUntil(size_t n) {
    uv_timer_t tick;
    uv_timer_init(&loop_, &tick);
    uv_timer_start(
        &tick, [](uv_timer_t*) {}, 10, 10);
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (recorder_.received < n && std::chrono::steady_clock::now() < until) {
      uv_run(&loop_, UV_RUN_ONCE);
    }
    uv_close(reinterpret_cast<uv_handle_t*>(&tick), nullptr);
    uv_run(&loop_, UV_RUN_NOWAIT);
  }
  // One request of `counter` (limit 10, 10 s windows) in window `id` with `left_ms` of it
  // left: what the plugin asks at that moment of its clock.
  Answer Take(RedisStore& store, const std::string& counter, int64_t id, uint64_t left_ms,
              uint64_t limit = 10) {
    uv_update_time(&loop_);
    std::string current;
    std::string previous;
    // The names for a time inside window `id` (only the id matters to them).
    MakeSlidingKeys(counter, 10, id * 10'000, &current, &previous);
    size_t token = recorder_.received;
    store.IncrementSliding({current, previous, 10, left_ms, limit, 1}, &recorder_, token);
    RunUntil(token + 1);
    EXPECT_EQ(recorder_.received, token + 1) << "no answer for " << current;
    return recorder_.answers.size() > token ? recorder_.answers[token] : Answer{};
  }
  static std::string Counter(const std::string& counter, int64_t id) {
    return counter + "." + std::to_string(id) + ".counter";
  }

  // Across a boundary, on any store: `get(key)` reads a counter back with redis-cli.
  template <typename Get>
  void CrossBoundary(RedisStore& store, const std::string& counter, int64_t id, Get get) {
    // Window `id`, 4 s in: ten admitted, counting 1..10; the eleventh is rejected, uncounted.
    for (int i = 1; i <= 10; ++i) {
      Answer a = Take(store, counter, id, 6'000);
      ASSERT_TRUE(a.ok) << a.error;
      EXPECT_EQ(a.admitted, 1) << i;
      EXPECT_EQ(a.count, i);
      EXPECT_EQ(a.previous, 0);
    }
    Answer a = Take(store, counter, id, 5'000);
    EXPECT_EQ(a.admitted, 0);
    EXPECT_EQ(a.count, 10);
    EXPECT_EQ(get(Counter(counter, id)), "10");
    // Window id + 1, 2.5 s in: the previous ten weigh 7.5, so three more (0 + 7.5, 1 + 7.5,
    // 2 + 7.5 < 10), then 3 + 7.5 >= 10 rejects.
    for (int i = 1; i <= 3; ++i) {
      a = Take(store, counter, id + 1, 7'500);
      ASSERT_TRUE(a.ok) << a.error;
      EXPECT_EQ(a.admitted, 1) << i;
      EXPECT_EQ(a.count, i);
      EXPECT_EQ(a.previous, 10);
    }
    a = Take(store, counter, id + 1, 7'500);
    EXPECT_EQ(a.admitted, 0);
    EXPECT_EQ(a.count, 3);
    EXPECT_EQ(JudgeSliding(false, 3, 10, 10, 10, 7'500).reset_cs, 50u);
    // Just over half a second later the share is under 7: one more.
    a = Take(store, counter, id + 1, 6'999);
    EXPECT_EQ(a.admitted, 1);
    EXPECT_EQ(a.count, 4);
    // Two windows on, the first no longer counts: a fresh ten.
    a = Take(store, counter, id + 3, 9'999);
    EXPECT_EQ(a.admitted, 1);
    EXPECT_EQ(a.count, 1);
    EXPECT_EQ(a.previous, 0);
    EXPECT_EQ(get(Counter(counter, id + 1)), "4");
    EXPECT_EQ(get(Counter(counter, id + 3)), "1");
  }

  uv_loop_t loop_;
  bool looping_ = false;
  Recorder recorder_;
  std::vector<std::unique_ptr<RedisStore>> stores_;
};

class SlidingRedisTest : public SlidingStoreTest {
 protected:
  void SetUp() override {
    SlidingStoreTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(redis_.Start()) << redis_.error();
  }
  RedisLink& NewLink() {
    RedisConfig c;
    c.host = "127.0.0.1";
    c.port = redis_.port();
    stores_.push_back(std::make_unique<RedisLink>(&loop_, c));
    return static_cast<RedisLink&>(*stores_.back());
  }
  RedisServer redis_;
};

TEST_F(SlidingRedisTest, TheEstimatorDecidesAcrossAWindowBoundary) {
  RedisLink& link = NewLink();
  const std::string counter = "plugin-limit-count:/apisix/routes/1:7:alice";
  ASSERT_NO_FATAL_FAILURE(CrossBoundary(link, counter, 170000000, [&](const std::string& key) {
    return redis_.Command({"GET", key});
  }));
  // APISIX's expiry: two windows from the counter's first request.
  int ttl = std::stoi(redis_.Command({"TTL", Counter(counter, 170000001)}));
  EXPECT_GT(ttl, 15);
  EXPECT_LE(ttl, 20);
  EXPECT_EQ(link.in_flight(), 0u);
}

TEST_F(SlidingRedisTest, ApisixWrittenCountersAreReadAsApisixReadsThem) {
  RedisLink& link = NewLink();
  const std::string counter = "plugin-limit-count:/apisix/routes/2:9:bob";
  // An APISIX instance counted 25 in the previous window (over the limit: capped at 10)
  // and 4 in this one.
  redis_.Command({"SET", Counter(counter, 41), "25", "EX", "20"});
  redis_.Command({"SET", Counter(counter, 42), "4", "EX", "20"});
  Answer a = Take(link, counter, 42, 5'000);  // 4 + 5 < 10
  EXPECT_EQ(a.admitted, 1);
  EXPECT_EQ(a.count, 5);
  EXPECT_EQ(a.previous, 10);
  a = Take(link, counter, 42, 5'000);  // 5 + 5
  EXPECT_EQ(a.admitted, 0);
  EXPECT_EQ(a.count, 5);
  EXPECT_EQ(redis_.Command({"GET", Counter(counter, 42)}), "5");
  // A counter without an expiry (not one APISIX wrote) counts as none and gets one.
  redis_.Command({"SET", Counter(counter, 50), "9"});
  a = Take(link, counter, 50, 10'000);
  EXPECT_EQ(a.admitted, 1);
  EXPECT_EQ(a.count, 1);
  EXPECT_GT(std::stoi(redis_.Command({"TTL", Counter(counter, 50)})), 0);
  // A counter that is not a number fails the call (500 or degradation in the plugin).
  redis_.Command({"SET", Counter(counter, 59), "abc", "EX", "20"});
  a = Take(link, counter, 60, 5'000);
  EXPECT_FALSE(a.ok);
  // The scripts are loaded again when the server forgets them.
  redis_.Command({"SCRIPT", "FLUSH"});
  a = Take(link, counter, 70, 5'000);
  ASSERT_TRUE(a.ok) << a.error;
  EXPECT_EQ(a.admitted, 1);
  EXPECT_EQ(a.count, 1);
  // And the fixed window's script still runs beside the sliding one on the link.
  size_t token = recorder_.received;
  link.IncrementFixed("plugin-limit-count:v1:fixed", 60, 1, &recorder_, token);
  RunUntil(token + 1);
  EXPECT_EQ(redis_.Command({"GET", "plugin-limit-count:v1:fixed"}), "1");
}

TEST_F(SlidingRedisTest, AnUnreachableServerFailsTheCall) {
  RedisLink& link = NewLink();
  redis_.Kill();
  Answer a = Take(link, "plugin-limit-count:x", 1, 5'000);
  EXPECT_FALSE(a.ok);
  EXPECT_FALSE(a.error.empty());
}

class SlidingClusterTest : public SlidingStoreTest {
 protected:
  void SetUp() override {
    SlidingStoreTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(cluster_.Start()) << cluster_.error();
  }
  ClusterLink& NewLink(int seed) {
    RedisConfig c;
    c.cluster_nodes = {{"127.0.0.1", cluster_.port(seed)}};
    c.cluster_name = "test";
    stores_.push_back(std::make_unique<ClusterLink>(&loop_, c));
    return static_cast<ClusterLink&>(*stores_.back());
  }
  RedisCluster cluster_;
};

TEST_F(SlidingClusterTest, ThePreviousCounterIsReadAtItsOwnMaster) {
  ClusterLink& a = NewLink(0);
  ClusterLink& b = NewLink(2);  // a second worker (or gateway): one count
  // A counter whose windows id and id + 1 live on different masters.
  std::string counter;
  int64_t id = 170000000;
  for (int i = 0;; ++i) {
    counter = "plugin-limit-count:/apisix/routes/1:7:user" + std::to_string(i);
    if (cluster_.OwnerOf(KeySlot(Counter(counter, id))) !=
        cluster_.OwnerOf(KeySlot(Counter(counter, id + 1)))) {
      break;
    }
  }
  int calls = 0;
  struct Alternating final : RedisStore {
    Alternating(RedisStore& a, RedisStore& b, int* calls) : a(a), b(b), calls(calls) {}
    void IncrementFixed(std::string_view, uint64_t, uint64_t, Waiter*, uint64_t) override {}
    void IncrementSliding(const SlidingCall& call, Waiter* w, uint64_t token) override {
      ((*calls)++ % 2 == 0 ? a : b).IncrementSliding(call, w, token);
    }
    void Forget(const Waiter*) override {}
    RedisStore& a;
    RedisStore& b;
    int* calls;
  } both(a, b, &calls);
  ASSERT_NO_FATAL_FAILURE(CrossBoundary(both, counter, id, [&](const std::string& key) {
    return cluster_.KeyCommand(key, {"GET", key});
  }));
  int ttl =
      std::stoi(cluster_.KeyCommand(Counter(counter, id + 1), {"TTL", Counter(counter, id + 1)}));
  EXPECT_GT(ttl, 15);
  EXPECT_LE(ttl, 20);
  EXPECT_EQ(a.in_flight(), 0u);
  EXPECT_EQ(b.in_flight(), 0u);
}

TEST_F(SlidingClusterTest, AMigratedPreviousCounterIsFollowed) {
  ClusterLink& link = NewLink(0);
  const std::string counter = "plugin-limit-count:/apisix/routes/3:1:eve";
  const int64_t id = 900;
  const std::string prev = Counter(counter, id - 1);
  const int slot = KeySlot(prev);
  const int owner = cluster_.OwnerOf(slot);
  cluster_.KeyCommand(prev, {"SET", prev, "10", "EX", "20"});
  // The previous window's slot moves to another master: -ASK, then -MOVED, for the GET.
  const int to = (owner + 1) % cluster_.size();
  ASSERT_TRUE(cluster_.BeginMigration(slot, to)) << cluster_.error();
  ASSERT_TRUE(cluster_.MoveKey(slot, prev)) << cluster_.error();
  Answer a = Take(link, counter, id, 5'000);
  ASSERT_TRUE(a.ok) << a.error;
  EXPECT_EQ(a.previous, 10);
  EXPECT_EQ(a.admitted, 1);
  EXPECT_GE(link.asked(), 1u);
  ASSERT_TRUE(cluster_.FinishMigration(slot)) << cluster_.error();
  a = Take(link, counter, id, 5'000);
  ASSERT_TRUE(a.ok) << a.error;
  EXPECT_EQ(a.previous, 10);
  EXPECT_EQ(a.count, 2);
  EXPECT_GE(link.moved(), 1u);
}

}  // namespace
}  // namespace turnpike::plugins::limit_count
