// limit-count's delayed sync (sync_interval): the local decisions of SyncTable under an
// injected clock, the flush of SyncWorker through a link double on a real libuv loop, and
// the configuration rules.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <uv.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "plugins/limit_count/delayed_sync.h"
#include "plugins/limit_count/limit_count.h"
#include "plugins/limit_count/sliding_window.h"
#include "support/fake_clock.h"
#include "support/fake_factory_context.h"

namespace turnpike::plugins::limit_count {
namespace {

using turnpike::testing::FakeClock;
using turnpike::testing::FakeFactoryContext;
using Kind = SyncTable::Decision::Kind;

constexpr int64_t kWindowMs = 60'000;

TEST(SyncTableTest, AKeyWithoutQuotaAsksRedisThenIsDecidedLocally) {
  FakeClock clock;
  SyncTable t(1024);
  CounterKey k = Fingerprint("/apisix/routes/1:1:", "alice");
  int64_t now = clock.MonotonicMs();

  SyncTable::Decision d = t.Decide(k, 5, 1, kWindowMs, now);
  ASSERT_EQ(d.kind, Kind::kAskRedis);
  // Redis counted it: 1 in a window of 60 s.
  EXPECT_FALSE(t.Settle(k, 0, true, 1, kWindowMs, now));

  clock.Advance(1000);
  now = clock.MonotonicMs();
  d = t.Decide(k, 5, 1, kWindowMs, now);
  ASSERT_EQ(d.kind, Kind::kAdmit);
  EXPECT_TRUE(d.claimed);  // the first admission since the last flush owns the key
  EXPECT_EQ(d.remaining, 3u);
  EXPECT_EQ(d.reset_ms, kWindowMs - 1000);
  for (uint64_t left : {2u, 1u, 0u}) {
    d = t.Decide(k, 5, 1, kWindowMs, now);
    ASSERT_EQ(d.kind, Kind::kAdmit);
    EXPECT_FALSE(d.claimed);
    EXPECT_EQ(d.remaining, left);
  }
  d = t.Decide(k, 5, 1, kWindowMs, now);
  EXPECT_EQ(d.kind, Kind::kReject);  // 1 remote + 4 local = 5
  EXPECT_EQ(d.remaining, 0u);
  SyncTable::View v;
  ASSERT_TRUE(t.Peek(k, &v));
  EXPECT_EQ(v.used, 1u);
  EXPECT_EQ(v.delta, 4u);  // rejections are not counted
  EXPECT_TRUE(v.owned);

  // A larger templated count for the same key leaves room again.
  EXPECT_EQ(t.Decide(k, 6, 1, kWindowMs, now).kind, Kind::kAdmit);
}

TEST(SyncTableTest, AFlushMovesTheDeltaInFlightAndItsAnswerBecomesTheQuota) {
  FakeClock clock;
  SyncTable t(1024);
  CounterKey k = Fingerprint("p:", "k");
  int64_t now = clock.MonotonicMs();
  ASSERT_EQ(t.Decide(k, 10, 1, kWindowMs, now).kind, Kind::kAskRedis);
  t.Settle(k, 0, true, 1, kWindowMs, now);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(t.Decide(k, 10, 1, kWindowMs, now).kind, Kind::kAdmit);

  EXPECT_EQ(t.TakeDelta(k), 3u);
  SyncTable::View v;
  ASSERT_TRUE(t.Peek(k, &v));
  EXPECT_EQ(v.delta, 0u);
  EXPECT_EQ(v.inflight, 3u);
  EXPECT_FALSE(v.owned);
  // In flight still counts against the limit: 1 + 3 + 1 = 5 used.
  SyncTable::Decision d = t.Decide(k, 10, 1, kWindowMs, now);
  ASSERT_EQ(d.kind, Kind::kAdmit);
  EXPECT_TRUE(d.claimed);  // owned again: the next flush sends it
  EXPECT_EQ(d.remaining, 5u);

  // Redis answers 7 (another gateway added 3 meanwhile), 50 s left.
  clock.Advance(100);
  EXPECT_FALSE(t.Settle(k, 3, true, 7, 50'000, clock.MonotonicMs()));
  ASSERT_TRUE(t.Peek(k, &v));
  EXPECT_EQ(v.used, 7u);
  EXPECT_EQ(v.inflight, 0u);
  EXPECT_EQ(v.delta, 1u);
  d = t.Decide(k, 10, 1, kWindowMs, clock.MonotonicMs());
  EXPECT_EQ(d.remaining, 1u);  // 10 - 7 - 1 - 1
  EXPECT_EQ(d.reset_ms, 50'000);
}

TEST(SyncTableTest, AnOlderAnswerDoesNotUndoANewerOneInTheSameWindow) {
  FakeClock clock;
  SyncTable t(1024);
  CounterKey k = Fingerprint("p:", "k");
  int64_t now = clock.MonotonicMs();
  t.Decide(k, 100, 1, kWindowMs, now);
  t.Settle(k, 0, true, 40, 30'000, now);
  clock.Advance(10);
  t.Settle(k, 0, true, 30, 29'995, clock.MonotonicMs());  // another worker's, sent earlier
  SyncTable::View v;
  ASSERT_TRUE(t.Peek(k, &v));
  EXPECT_EQ(v.used, 40u);
  // A new window (it ends much later): its count replaces the old one.
  clock.Advance(30'000);
  t.Settle(k, 0, true, 2, kWindowMs, clock.MonotonicMs());
  ASSERT_TRUE(t.Peek(k, &v));
  EXPECT_EQ(v.used, 2u);
}

TEST(SyncTableTest, AFailedSyncKeepsTheDeltaAndOwnershipGoesToWhoeverHoldsIt) {
  FakeClock clock;
  SyncTable t(1024);
  CounterKey k = Fingerprint("p:", "k");
  int64_t now = clock.MonotonicMs();
  t.Decide(k, 100, 1, kWindowMs, now);
  t.Settle(k, 0, true, 1, kWindowMs, now);
  for (int i = 0; i < 5; ++i) t.Decide(k, 100, 1, kWindowMs, now);
  uint64_t sent = t.TakeDelta(k);
  ASSERT_EQ(sent, 5u);
  // Redis is down: the 5 go back, and the flusher owns the key again (nobody else does).
  EXPECT_TRUE(t.Settle(k, sent, false, 0, 0, now));
  SyncTable::View v;
  ASSERT_TRUE(t.Peek(k, &v));
  EXPECT_EQ(v.delta, 5u);
  EXPECT_EQ(v.inflight, 0u);
  EXPECT_TRUE(v.owned);
  EXPECT_EQ(v.used, 1u);  // the last quota stays in force until its window ends

  // Failed while another worker had claimed the key meanwhile: that one keeps it.
  sent = t.TakeDelta(k);
  EXPECT_TRUE(t.Decide(k, 100, 1, kWindowMs, now).claimed);
  EXPECT_FALSE(t.Settle(k, sent, false, 0, 0, now));
  ASSERT_TRUE(t.Peek(k, &v));
  EXPECT_EQ(v.delta, 6u);
}

TEST(SyncTableTest, APassedWindowAsksRedisAndTheDeltaStaysForTheFlush) {
  FakeClock clock;
  SyncTable t(1024);
  CounterKey k = Fingerprint("p:", "k");
  t.Decide(k, 3, 1, 1000, clock.MonotonicMs());
  t.Settle(k, 0, true, 1, 1000, clock.MonotonicMs());
  ASSERT_EQ(t.Decide(k, 3, 1, 1000, clock.MonotonicMs()).kind, Kind::kAdmit);
  ASSERT_EQ(t.Decide(k, 3, 1, 1000, clock.MonotonicMs()).kind, Kind::kAdmit);
  ASSERT_EQ(t.Decide(k, 3, 1, 1000, clock.MonotonicMs()).kind, Kind::kReject);
  clock.Advance(999);
  EXPECT_EQ(t.Decide(k, 3, 1, 1000, clock.MonotonicMs()).kind, Kind::kReject);
  clock.Advance(1);
  ASSERT_EQ(t.Decide(k, 3, 1, 1000, clock.MonotonicMs()).kind, Kind::kAskRedis);
  // Every request asks until an answer comes (nothing is held back meanwhile).
  ASSERT_EQ(t.Decide(k, 3, 1, 1000, clock.MonotonicMs()).kind, Kind::kAskRedis);
  SyncTable::View v;
  ASSERT_TRUE(t.Peek(k, &v));
  EXPECT_EQ(v.delta, 2u);  // the unsent admissions are not dropped: the owner sends them
  EXPECT_TRUE(v.owned);
  // The new window's answer (both asks counted): 2 used, then the owner's 2 are pending.
  t.Settle(k, 0, true, 2, 1000, clock.MonotonicMs());
  EXPECT_EQ(t.Decide(k, 3, 1, 1000, clock.MonotonicMs()).kind, Kind::kReject);
  EXPECT_EQ(t.TakeDelta(k), 2u);
}

TEST(SyncTableTest, AbandonedCallsForceAFreshQuota) {
  FakeClock clock;
  SyncTable t(1024);
  CounterKey k = Fingerprint("p:", "k");
  int64_t now = clock.MonotonicMs();
  t.Decide(k, 10, 1, kWindowMs, now);
  t.Settle(k, 0, true, 1, kWindowMs, now);
  t.Decide(k, 10, 1, kWindowMs, now);
  uint64_t sent = t.TakeDelta(k);
  t.Abandon(k, sent);
  SyncTable::View v;
  ASSERT_TRUE(t.Peek(k, &v));
  EXPECT_EQ(v.inflight, 0u);
  EXPECT_EQ(t.Decide(k, 10, 1, kWindowMs, now).kind, Kind::kAskRedis);
}

TEST(SyncTableTest, EvictionPrefersSlotsWithNothingUnsent) {
  FakeClock clock;
  SyncTable t(1024);  // 16 slots per shard: one probe window
  ASSERT_EQ(t.capacity(), 1024u);
  int64_t now = clock.MonotonicMs();
  // 16 keys of shard 0 (the shard comes from hi, the home slot from lo): key 0 an idle
  // quota, keys 1..15 with an unsent admission each.
  auto key = [](uint64_t i) { return CounterKey{0, i}; };
  for (uint64_t i = 0; i < 16; ++i) {
    t.Decide(key(i), 10, 1, kWindowMs, now);
    t.Settle(key(i), 0, true, 1, kWindowMs, now);
    if (i > 0) {
      ASSERT_EQ(t.Decide(key(i), 10, 1, kWindowMs, now).kind, Kind::kAdmit);
    }
  }
  t.Decide(key(100), 10, 1, kWindowMs, now);
  EXPECT_EQ(t.evictions(), 1u);
  EXPECT_EQ(t.lost_deltas(), 0u);
  SyncTable::View v;
  EXPECT_FALSE(t.Peek(key(0), &v));  // the idle one went
  for (uint64_t i = 1; i < 16; ++i) EXPECT_TRUE(t.Peek(key(i), &v)) << i;
  // Every slot holding unsent counts: one of them goes, and its delta is lost (counted).
  t.Settle(key(100), 0, true, 1, kWindowMs, now);
  ASSERT_EQ(t.Decide(key(100), 10, 1, kWindowMs, now).kind, Kind::kAdmit);
  t.Decide(key(200), 10, 1, kWindowMs, now);
  EXPECT_EQ(t.evictions(), 2u);
  EXPECT_EQ(t.lost_deltas(), 1u);
}

TEST(SyncTableTest, AnEndedWindowFreesItsSlotWithoutASweep) {
  FakeClock clock;
  SyncTable t(1024);
  auto key = [](uint64_t i) { return CounterKey{0, i}; };
  t.Decide(key(0), 10, 1, 1000, clock.MonotonicMs());
  t.Settle(key(0), 0, true, 1, 1000, clock.MonotonicMs());
  clock.Advance(1000);
  for (uint64_t i = 1; i <= 16; ++i) t.Decide(key(i), 10, 1, kWindowMs, clock.MonotonicMs());
  EXPECT_EQ(t.evictions(), 0u);  // key 0's slot was free again
}

TEST(SyncTableTest, WorkersOfOneProcessNeverOvershootEachOther) {
  SyncTable t(4096);
  CounterKey k = Fingerprint("p:", "shared");
  t.Decide(k, 1000, 1, kWindowMs, 0);
  t.Settle(k, 0, true, 1, kWindowMs, 0);
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 1000; ++j) {
        if (t.Decide(k, 1000, 1, kWindowMs, 1).kind == Kind::kAdmit) admitted.fetch_add(1);
        if (j % 100 == 0) {  // a flush now and then, answered at once
          uint64_t d = t.TakeDelta(k);
          SyncTable::View v;
          t.Peek(k, &v);
          t.Settle(k, d, true, static_cast<int64_t>(v.used + d), kWindowMs, 1);
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(admitted.load(), 999);
}

// ---------------------------------------------------------------- SyncTable, sliding

constexpr int64_t kSlideMs = 10'000;
constexpr int64_t kEnd = 20'000;  // the window [10 s, 20 s) of the wall clock

TEST(SyncTableSlidingTest, AViewOfTheWindowDecidesWithTheScriptsCheck) {
  FakeClock clock;
  SyncTable t(1024);
  CounterKey k = Fingerprint("/apisix/routes/1:1:", "alice");
  int64_t now = clock.MonotonicMs();
  // 5 s into the window (left 5 s): no view yet.
  ASSERT_EQ(t.DecideSliding(k, 10, 1, kSlideMs, kEnd, 5'000, now).kind, Kind::kAskRedis);
  // Redis admitted it: 1 in this window, 4 in the previous one.
  EXPECT_FALSE(t.SettleSliding(k, 0, true, kEnd, 1, 4, 15'000, now));
  // The previous window's share is 4 x 5/10 = 2: admitted while 2 + seen < 10.
  SyncTable::Decision d = t.DecideSliding(k, 10, 1, kSlideMs, kEnd, 5'000, now);
  ASSERT_EQ(d.kind, Kind::kAdmit);
  EXPECT_TRUE(d.claimed);
  EXPECT_EQ(d.count, 2u);
  EXPECT_EQ(d.previous, 4u);
  SlidingVerdict v = JudgeSliding(true, d.count, d.previous, 10, 10, 5'000);
  EXPECT_EQ(v.remaining, 6u);  // 10 - 2 - 2
  EXPECT_EQ(v.reset_cs, 500u);
  for (uint64_t seen : {3u, 4u, 5u, 6u, 7u, 8u}) {
    d = t.DecideSliding(k, 10, 1, kSlideMs, kEnd, 5'000, now);
    ASSERT_EQ(d.kind, Kind::kAdmit);
    EXPECT_FALSE(d.claimed);
    EXPECT_EQ(d.count, seen);
  }
  d = t.DecideSliding(k, 10, 1, kSlideMs, kEnd, 5'000, now);
  ASSERT_EQ(d.kind, Kind::kReject);  // 8 + 2 reaches 10
  EXPECT_EQ(d.count, 8u);
  v = JudgeSliding(false, d.count, d.previous, 10, 10, 5'000);
  EXPECT_EQ(v.remaining, 0u);
  EXPECT_EQ(v.reset_cs, 0u);  // 5 s - (10 - 8) / (0.4 per s): the share lets one in at once
  // Later in the same window the share has shrunk (4 x 1/10): two more fit, not three.
  EXPECT_EQ(t.DecideSliding(k, 10, 1, kSlideMs, kEnd, 1'000, now).kind, Kind::kAdmit);
  EXPECT_EQ(t.DecideSliding(k, 10, 1, kSlideMs, kEnd, 1'000, now).kind, Kind::kAdmit);
  d = t.DecideSliding(k, 10, 1, kSlideMs, kEnd, 1'000, now);
  EXPECT_EQ(d.kind, Kind::kReject);  // the window's own count is at the limit
  EXPECT_EQ(JudgeSliding(false, d.count, d.previous, 10, 10, 1'000).reset_cs, 100u);
  SyncTable::View view;
  ASSERT_TRUE(t.Peek(k, &view));
  EXPECT_EQ(view.used, 1u);
  EXPECT_EQ(view.previous, 4u);
  EXPECT_EQ(view.delta, 9u);  // rejections are not counted
  EXPECT_EQ(view.reset_at_ms, kEnd);
}

TEST(SyncTableSlidingTest, ARollOverAsksRedisAndTheDeltaCountsInTheNewWindow) {
  FakeClock clock;
  SyncTable t(1024);
  CounterKey k = Fingerprint("p:", "bob");
  int64_t now = clock.MonotonicMs();
  ASSERT_EQ(t.DecideSliding(k, 10, 1, kSlideMs, kEnd, 1'000, now).kind, Kind::kAskRedis);
  t.SettleSliding(k, 0, true, kEnd, 5, 0, 19'000, now);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(t.DecideSliding(k, 10, 1, kSlideMs, kEnd, 1'000, now).kind, Kind::kAdmit);
  }
  // The next window: the view is of the one before, so Redis decides (and reads both).
  const int64_t next_end = kEnd + kSlideMs;
  ASSERT_EQ(t.DecideSliding(k, 10, 1, kSlideMs, next_end, 9'000, now).kind, Kind::kAskRedis);
  // Redis had 5 in the window that ended (the 3 local ones are not sent yet) and admitted
  // this one as the first of the new window.
  t.SettleSliding(k, 0, true, next_end, 1, 5, 21'000, now);
  // The unsent 3 go to the current window's counter at the next flush: counted there.
  SyncTable::Decision d = t.DecideSliding(k, 10, 1, kSlideMs, next_end, 9'000, now);
  ASSERT_EQ(d.kind, Kind::kAdmit);
  EXPECT_EQ(d.count, 5u);  // 1 + 3 unsent + this one
  EXPECT_EQ(d.previous, 5u);
  // 5 x 0.9 = 4.5 of the previous window and 5 of this one: one more fits (9.5 < 10), then
  // none.
  EXPECT_EQ(t.DecideSliding(k, 10, 1, kSlideMs, next_end, 9'000, now).kind, Kind::kAdmit);
  EXPECT_EQ(t.DecideSliding(k, 10, 1, kSlideMs, next_end, 9'000, now).kind, Kind::kReject);
  // An answer of the window before does not undo the newer view.
  t.SettleSliding(k, 0, true, kEnd, 7, 0, 21'000, now);
  SyncTable::View view;
  ASSERT_TRUE(t.Peek(k, &view));
  EXPECT_EQ(view.reset_at_ms, next_end);
  EXPECT_EQ(view.used, 1u);
  EXPECT_EQ(view.previous, 5u);
}

TEST(SyncTableSlidingTest, AFlushAnswerRefreshesTheSameWindowOnly) {
  FakeClock clock;
  SyncTable t(1024);
  CounterKey k = Fingerprint("p:", "carol");
  int64_t now = clock.MonotonicMs();
  ASSERT_EQ(t.DecideSliding(k, 100, 1, kSlideMs, kEnd, 5'000, now).kind, Kind::kAskRedis);
  t.SettleSliding(k, 0, true, kEnd, 1, 0, 15'000, now);
  for (int i = 0; i < 4; ++i) t.DecideSliding(k, 100, 1, kSlideMs, kEnd, 5'000, now);
  ASSERT_EQ(t.TakeDelta(k), 4u);
  // Another gateway added 10 meanwhile: the flush's answer (a count only) says 15.
  EXPECT_FALSE(t.SettleSliding(k, 4, true, kEnd, 15, -1, 15'100, now));
  SyncTable::View view;
  ASSERT_TRUE(t.Peek(k, &view));
  EXPECT_EQ(view.used, 15u);
  EXPECT_EQ(view.inflight, 0u);
  EXPECT_EQ(view.previous, 0u);
  // An older, smaller answer of the same window does not lower it.
  t.SettleSliding(k, 0, true, kEnd, 2, 0, 15'200, now);
  ASSERT_TRUE(t.Peek(k, &view));
  EXPECT_EQ(view.used, 15u);
  // A flush that went to the next window's counter (sent after the boundary) leaves this
  // view alone; the next window's first request asks Redis.
  t.DecideSliding(k, 100, 1, kSlideMs, kEnd, 5'000, now);
  ASSERT_EQ(t.TakeDelta(k), 1u);
  t.SettleSliding(k, 1, true, kEnd + kSlideMs, 1, -1, 20'001, now);
  ASSERT_TRUE(t.Peek(k, &view));
  EXPECT_EQ(view.reset_at_ms, kEnd);
  EXPECT_EQ(view.used, 15u);
  EXPECT_EQ(view.inflight, 0u);
  EXPECT_EQ(t.DecideSliding(k, 100, 1, kSlideMs, kEnd + kSlideMs, 9'999, now).kind,
            Kind::kAskRedis);
  // A failed flush puts its delta back and hands the key to the caller.
  t.SettleSliding(k, 0, true, kEnd + kSlideMs, 2, 16, 20'001, now);
  t.DecideSliding(k, 100, 1, kSlideMs, kEnd + kSlideMs, 9'999, now);
  ASSERT_EQ(t.TakeDelta(k), 1u);
  EXPECT_TRUE(t.SettleSliding(k, 1, false, kEnd + kSlideMs, 0, -1, 20'002, now));
  ASSERT_TRUE(t.Peek(k, &view));
  EXPECT_EQ(view.delta, 1u);
  EXPECT_TRUE(view.owned);
}

// ---------------------------------------------------------------- SyncWorker

// A link double: records the calls, answers when the test says.
class FakeLink final : public FixedWindowLink {
 public:
  struct Call {
    std::string key;
    uint64_t window_s;
    uint64_t n;
    RedisLink::Waiter* waiter;
    uint64_t token;
  };
  explicit FakeLink(std::vector<Call>* calls, bool* down) : calls_(calls), down_(down) {}
  void IncrementFixed(std::string_view key, uint64_t window_s, uint64_t n,
                      RedisLink::Waiter* waiter, uint64_t token) override {
    if (*down_) {
      waiter->OnRedisReply(nullptr, "Redis unreachable", token);  // inside the call
      return;
    }
    calls_->push_back({std::string(key), window_s, n, waiter, token});
  }
  void Forget(const RedisLink::Waiter*) override {}

 private:
  std::vector<Call>* calls_;
  bool* down_;
};

// Answers `call` with the script's [count, ttl].
void Answer(const FakeLink::Call& call, int64_t count, int64_t ttl_ms) {
  redisReply c{};
  c.type = REDIS_REPLY_INTEGER;
  c.integer = count;
  redisReply t{};
  t.type = REDIS_REPLY_INTEGER;
  t.integer = ttl_ms;
  redisReply* elements[2] = {&c, &t};
  redisReply array{};
  array.type = REDIS_REPLY_ARRAY;
  array.elements = 2;
  array.element = elements;
  call.waiter->OnRedisReply(&array, {}, call.token);
}

class SyncWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(uv_loop_init(&loop_), 0); }
  void TearDown() override {
    worker_.reset();
    uv_run(&loop_, UV_RUN_NOWAIT);  // the timer's close callback
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }
  void Make(int64_t interval_ms, bool sliding = false) {
    worker_ = std::make_unique<SyncWorker>(
        &loop_, table_, std::make_unique<FakeLink>(&calls_, &down_), interval_ms, clock_, sliding);
  }
  // A key whose quota is known (1 used), then `n` local admissions by this worker.
  CounterKey Admit(const std::string& name, int n) {
    CounterKey k = Fingerprint("p:", name);
    int64_t now = clock_.MonotonicMs();
    SyncTable::View v;
    if (!t().Peek(k, &v)) {
      EXPECT_EQ(t().Decide(k, 1000, 1, kWindowMs, now).kind, Kind::kAskRedis);
      t().Settle(k, 0, true, 1, kWindowMs, now);
    }
    for (int i = 0; i < n; ++i) {
      SyncTable::Decision d = t().Decide(k, 1000, 1, kWindowMs, now);
      EXPECT_EQ(d.kind, Kind::kAdmit);
      if (d.claimed) worker_->Track(k, "plugin-limit-count:v1:p:" + name, 60);
    }
    return k;
  }
  SyncTable& t() { return *table_; }

  uv_loop_t loop_;
  FakeClock clock_;
  std::shared_ptr<SyncTable> table_ = std::make_shared<SyncTable>(1024);
  std::vector<FakeLink::Call> calls_;
  bool down_ = false;
  std::unique_ptr<SyncWorker> worker_;
};

TEST_F(SyncWorkerTest, TheTimerSendsOneCallPerKeyWithItsDelta) {
  Make(50);
  CounterKey a = Admit("a", 7);
  CounterKey b = Admit("b", 2);
  EXPECT_EQ(worker_->owned(), 2u);
  EXPECT_TRUE(calls_.empty());
  auto start = uv_now(&loop_);
  uv_run(&loop_, UV_RUN_ONCE);  // the timer, sync_interval after the first owned key
  uv_update_time(&loop_);
  EXPECT_GE(uv_now(&loop_) - start, 45u);
  ASSERT_EQ(calls_.size(), 2u);  // both in flight at once
  EXPECT_EQ(calls_[0].key, "plugin-limit-count:v1:p:a");
  EXPECT_EQ(calls_[0].n, 7u);
  EXPECT_EQ(calls_[0].window_s, 60u);
  EXPECT_EQ(calls_[1].n, 2u);
  EXPECT_EQ(worker_->in_flight(), 2u);
  EXPECT_EQ(worker_->owned(), 0u);
  Answer(calls_[0], 8, 55'000);
  Answer(calls_[1], 3, 55'000);
  EXPECT_EQ(worker_->in_flight(), 0u);
  SyncTable::View v;
  ASSERT_TRUE(t().Peek(a, &v));
  EXPECT_EQ(v.used, 8u);
  EXPECT_EQ(v.delta + v.inflight, 0u);
  ASSERT_TRUE(t().Peek(b, &v));
  EXPECT_EQ(v.used, 3u);
  // Nothing owned: the timer is not armed, the loop has nothing left to run.
  EXPECT_EQ(uv_run(&loop_, UV_RUN_NOWAIT), 0);
}

TEST_F(SyncWorkerTest, AFailedFlushIsSentAgainAtTheNextInterval) {
  Make(20);
  CounterKey a = Admit("a", 4);
  down_ = true;
  worker_->Flush();
  EXPECT_TRUE(calls_.empty());
  EXPECT_EQ(worker_->failures(), 1u);
  EXPECT_EQ(worker_->owned(), 1u);  // back in the list
  SyncTable::View v;
  ASSERT_TRUE(t().Peek(a, &v));
  EXPECT_EQ(v.delta, 4u);
  Admit("a", 1);  // more meanwhile
  down_ = false;
  uv_run(&loop_, UV_RUN_ONCE);
  ASSERT_EQ(calls_.size(), 1u);
  EXPECT_EQ(calls_[0].n, 5u);  // nothing lost
  Answer(calls_[0], 6, 50'000);
  ASSERT_TRUE(t().Peek(a, &v));
  EXPECT_EQ(v.used, 6u);
  EXPECT_EQ(v.delta, 0u);
}

TEST_F(SyncWorkerTest, ABatchStillWaitingHoldsTheNextOneBack) {
  Make(10);
  Admit("a", 1);
  worker_->Flush();
  ASSERT_EQ(calls_.size(), 1u);
  Admit("a", 2);  // owned again while the first call waits
  worker_->Flush();
  EXPECT_EQ(calls_.size(), 1u);  // not sent: the batch has an answer outstanding
  EXPECT_EQ(worker_->owned(), 1u);
  Answer(calls_[0], 2, 50'000);
  uv_run(&loop_, UV_RUN_ONCE);  // the re-armed timer
  ASSERT_EQ(calls_.size(), 2u);
  EXPECT_EQ(calls_[1].n, 2u);
  Answer(calls_[1], 4, 50'000);
}

TEST_F(SyncWorkerTest, AWorkerThatGoesAwaySendsWhatItOwns) {
  Make(10'000);
  CounterKey a = Admit("a", 3);
  worker_.reset();
  ASSERT_EQ(calls_.size(), 1u);
  EXPECT_EQ(calls_[0].n, 3u);
  SyncTable::View v;
  ASSERT_TRUE(t().Peek(a, &v));
  EXPECT_EQ(v.delta + v.inflight, 0u);
  EXPECT_FALSE(v.known);  // the next request asks Redis
}

TEST_F(SyncWorkerTest, ASlidingFlushAddsToTheCurrentWindowsCounter) {
  Make(10'000, /*sliding=*/true);
  // The fake wall clock is at 1,700,000,000,000 ms: with 20 s windows, window 85,000,000
  // has just begun and ends at 1,700,000,020,000.
  const int64_t end = 1'700'000'020'000;
  CounterKey k = Fingerprint("p:", "dave");
  int64_t now = clock_.MonotonicMs();
  ASSERT_EQ(t().DecideSliding(k, 50, 1, 20'000, end, 20'000, now).kind, Kind::kAskRedis);
  t().SettleSliding(k, 0, true, end, 1, 3, clock_.WallMs(), now);
  for (int i = 0; i < 4; ++i) {
    SyncTable::Decision d = t().DecideSliding(k, 50, 1, 20'000, end, 20'000, now);
    ASSERT_EQ(d.kind, Kind::kAdmit);
    if (d.claimed) worker_->Track(k, "plugin-limit-count:p:dave", 20);
  }
  clock_.Advance(1'000);
  worker_->Flush();
  ASSERT_EQ(calls_.size(), 1u);
  EXPECT_EQ(calls_[0].key, "plugin-limit-count:p:dave.85000000.counter");
  EXPECT_EQ(calls_[0].window_s, 40u);  // a new counter expires after two windows
  EXPECT_EQ(calls_[0].n, 4u);
  Answer(calls_[0], 9, 39'000);  // another gateway's 4 are in it too
  SyncTable::View v;
  ASSERT_TRUE(t().Peek(k, &v));
  EXPECT_EQ(v.used, 9u);
  EXPECT_EQ(v.previous, 3u);
  EXPECT_EQ(v.delta + v.inflight, 0u);
  // Admitted before the boundary, flushed after it: into the new window's counter, and the
  // old view is left alone (the new window's first request asks Redis).
  SyncTable::Decision d = t().DecideSliding(k, 50, 1, 20'000, end, 1'000, now);
  ASSERT_EQ(d.kind, Kind::kAdmit);
  ASSERT_TRUE(d.claimed);
  worker_->Track(k, "plugin-limit-count:p:dave", 20);
  clock_.Advance(19'500);
  worker_->Flush();
  ASSERT_EQ(calls_.size(), 2u);
  EXPECT_EQ(calls_[1].key, "plugin-limit-count:p:dave.85000001.counter");
  EXPECT_EQ(calls_[1].n, 1u);
  Answer(calls_[1], 1, 40'000);
  ASSERT_TRUE(t().Peek(k, &v));
  EXPECT_EQ(v.reset_at_ms, end);
  EXPECT_EQ(v.used, 9u);
  EXPECT_EQ(v.inflight, 0u);
  // A worker going away sends a sliding key's delta to the current window's counter too.
  d = t().DecideSliding(k, 50, 1, 20'000, end, 1'000, now);
  ASSERT_TRUE(d.claimed);
  worker_->Track(k, "plugin-limit-count:p:dave", 20);
  worker_.reset();
  ASSERT_EQ(calls_.size(), 3u);
  EXPECT_EQ(calls_[2].key, "plugin-limit-count:p:dave.85000001.counter");
  EXPECT_EQ(calls_[2].n, 1u);
}

// ---------------------------------------------------------------- configuration

class LimitCountSyncConfigTest : public ::testing::Test {
 protected:
  std::string Error(const std::string& json) {
    StatusOr<PluginConstSharedPtr> p = factory_.Create(nlohmann::json::parse(json), fctx_);
    EXPECT_FALSE(p.ok()) << json;
    return p.ok() ? "" : p.status().message();
  }
  LimitCountFactory factory_;
  FakeFactoryContext fctx_;
};

TEST_F(LimitCountSyncConfigTest, FollowsApisixRules) {
  const std::string redis = R"("policy": "redis", "redis_host": "127.0.0.1", )";
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, )" + redis + R"("sync_interval": 0.05})"),
            "property \"sync_interval\" validation failed: expected 0.05 to be at least 0.1");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, )" + redis + R"("sync_interval": "1"})"),
            "property \"sync_interval\" validation failed: wrong type: expected number, got "
            "string");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 2, )" + redis + R"("sync_interval": 2})"),
            "property \"sync_interval\" validation failed: must be less than time_window");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, "sync_interval": 1})"),
            "property \"sync_interval\" validation failed: only supported with the redis "
            "policies");
  StatusOr<PluginConstSharedPtr> ok =
      factory_.Create(nlohmann::json::parse(R"({"count": 1, "time_window": 2, )" + redis +
                                            R"("sync_interval": 1.5})"),
                      fctx_);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(static_cast<const LimitCountPlugin&>(*ok.value()).config().sync_interval_ms, 1500);
  ok = factory_.Create(nlohmann::json::parse(R"({"count": 1, "time_window": 2, )" + redis +
                                             R"("sync_interval": -1})"),
                       fctx_);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(static_cast<const LimitCountPlugin&>(*ok.value()).config().sync_interval_ms, -1);
}

}  // namespace
}  // namespace turnpike::plugins::limit_count
