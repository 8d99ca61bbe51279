// limit-count's delayed sync (`sync_interval` with the redis policies), as APISIX's
// delayed-syncer: a request is decided from a local view of the key's Redis count, and the
// requests admitted locally are added to Redis in one script call per key per interval, so
// Redis sees about one call per key and interval instead of one per request. Both window
// types: a fixed window's view is its count and end; a sliding window's is the counts of its
// current and previous windows (sliding_window.h).
//
// Per counter key the process keeps (SyncTable, shared by every worker):
//   - used, reset_at: the count in the key's Redis window and when that window ends, as the
//     last answer from Redis said (the "remote quota"); sliding: `used` is the current
//     window's counter, `previous` the window before's (capped at the limit), and reset_at
//     the current window's end on the wall clock, which names the window;
//   - delta: requests admitted here since then and not sent yet; inflight: deltas a flush
//     sent whose answer has not come.
// A request whose key has no remote quota yet, or whose window has passed (sliding: whose
// window is not the view's), goes to Redis at once with its own cost and waits for the
// answer, which becomes the key's quota (the request path of the redis policy, with its
// failure behaviour: 500 or allow_degradation; sliding: the check-and-increment, whose
// answer [admitted, count, previous] is the view). The key's unsent delta stays for its
// owner's flush (APISIX sends it along with the request), so a request whose client leaves
// while it waits (its answer then reaches nobody) leaves nothing half-done behind. Otherwise
// the request is decided here, without waiting, with seen = used + delta + inflight:
//   fixed:   admitted when seen + cost <= count;
//   sliding: admitted when seen < count and previous x left / window + seen < count, the
//            check of the sliding script (left: what remains of the current window now, so
//            the previous window's share shrinks between syncs as it does in Redis);
// (then delta += cost), else rejected (and not counted, as in APISIX). The quota headers
// come from this local view: fixed: remaining = count - seen after the request, reset = the
// time left of the remote window; sliding: what the sliding path computes from the same
// numbers (JudgeSliding: remaining less the previous window's share, reset rounded up).
// While Redis is down, a key with a view of the current window goes on being decided here;
// one that has to ask (no view, a new window) gets the failure behaviour.
//
// Flush, one owner per key: the worker whose request first dirtied a key since the key's
// last flush owns it and remembers it (SyncWorker, per worker and plugin instance); that
// worker's timer fires sync_interval after its first owned key, and every owned key's delta
// goes out through the worker's link, all calls pipelined at once (one script call per key;
// on a cluster each goes to its key's master). The answer refreshes the key's quota. A call
// that fails (Redis down, timeout) puts its delta back and the key is sent again at the next
// interval: counts are not lost while the process runs. A sliding key's delta goes to the
// counter of the window current when the flush is sent (APISIX's commit: INCRBY, or SET with
// EX of two windows for a new counter; the fixed script with a window of 2 x time_window
// does exactly that), so a delta admitted just before a window boundary may be counted in
// the next window, on every gateway alike; the view counts it there too. A flush's answer
// carries the current count only (APISIX's commit also re-reads the previous window): it
// refreshes a view of the same window, and the previous window's count is the one the
// window's first synchronous call read (that window is over, so only a flush racing the
// boundary can still change it).
//
// Slack: each gateway process decides alone between two syncs, so a fleet of G processes
// can admit up to G x (count - used at the last sync) in one interval where one process
// would admit (count - used): at most (G - 1) x remaining over the limit per key and
// interval, and nothing more once every process has synced. Workers of one process share
// the table and never overshoot each other.
//
// Memory: SyncTable is fixed at construction, 64 bytes per slot, one cache line (default
// 262,144 slots, 16 MiB, mapped as keys arrive). A slot is free again once its window has ended and
// nothing of it is waiting to be sent; a full probe window evicts an idle slot first (the
// one expiring first), and only when all 16 hold unsent counts one of those, whose delta is
// then lost (lost_deltas()). A worker's list of owned keys holds the keys it dirtied in one
// interval, and is reused (a sliding key's counter name is rendered into its entry's own
// buffer at each flush): no allocation per request once warm.
//
// Reload: counters are keyed by the counter identity (owner + conf CRC, or group) as the
// local policy's are, and the table belongs to the factory, so a reload keeps every key's
// state (an unchanged instance also keeps its SyncWorker). An instance that goes away sends
// its owned deltas without waiting for the answers and marks those keys for a synchronous
// refresh.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "plugins/limit_count/counter_table.h"
#include "plugins/limit_count/redis_link.h"
#include "turnpike/clock.h"

struct uv_loop_s;
struct uv_timer_s;

namespace turnpike::plugins::limit_count {

// What the flush needs from a link to a Redis deployment: "add `n` to `key`'s fixed window
// (opening one of `window_s` seconds when it has none); answer [count, ms left]" through
// `waiter`, with `token` handed back, at most once per call. RedisLink (redis,
// redis-sentinel) has these calls; another link (a cluster's) plugs in through
// LinkAdapter<Link>. Worker thread only.
class FixedWindowLink {
 public:
  virtual ~FixedWindowLink() = default;
  virtual void IncrementFixed(std::string_view key, uint64_t window_s, uint64_t n,
                              RedisLink::Waiter* waiter, uint64_t token) = 0;
  // `waiter` is going away: its calls in flight are answered to nobody.
  virtual void Forget(const RedisLink::Waiter* waiter) = 0;
};

template <typename Link>
class LinkAdapter final : public FixedWindowLink {
 public:
  explicit LinkAdapter(std::shared_ptr<Link> link) : link_(std::move(link)) {}
  void IncrementFixed(std::string_view key, uint64_t window_s, uint64_t n,
                      RedisLink::Waiter* waiter, uint64_t token) override {
    link_->IncrementFixed(key, window_s, n, waiter, token);
  }
  void Forget(const RedisLink::Waiter* waiter) override { link_->Forget(waiter); }

 private:
  std::shared_ptr<Link> link_;
};

// The script's answer [count, ms left]; false for anything else (an error, nullptr).
bool ParseWindowReply(const redisReply* reply, int64_t* count, int64_t* ttl_ms);

// The process-wide state of every delayed-sync key. Thread-safe: 64 shards, each a fixed
// array of slots under its own mutex; a call hashes nothing (the caller's fingerprint picks
// the shard) and holds one shard's lock for a probe of at most 16 slots. Nothing is
// allocated after construction. Times are the caller's monotonic milliseconds.
class SyncTable {
 public:
  static constexpr size_t kShards = 64;
  static constexpr size_t kProbe = 16;
  static constexpr size_t kSlotBytes = 64;

  // At least `capacity` slots (rounded up: a power of two per shard).
  explicit SyncTable(size_t capacity);
  ~SyncTable();
  SyncTable(const SyncTable&) = delete;
  SyncTable& operator=(const SyncTable&) = delete;

  struct Decision {
    enum Kind : uint8_t { kAdmit, kReject, kAskRedis } kind = kAskRedis;
    uint64_t remaining = 0;  // kAdmit: count - (used + delta + inflight) after this request
    int64_t reset_ms = 0;    // kAdmit/kReject: until the remote window ends
    bool claimed = false;    // kAdmit: the caller owns the key now: SyncWorker::Track it
    // DecideSliding, kAdmit/kReject: the count the decision saw (after this request when
    // admitted) and the previous window's (capped): JudgeSliding's inputs.
    uint64_t count = 0;
    uint64_t previous = 0;
  };
  // The request path: decides locally, or says to ask Redis (adding `cost`; the answer goes
  // to Settle() with nothing taken).
  Decision Decide(CounterKey key, uint64_t count, uint64_t cost, int64_t window_ms, int64_t now_ms);

  // window_type sliding: the request path for the window ending at `window_end_ms` (wall
  // clock; `left_ms` of it remain) of `window_ms`. Decided locally when the key's view is of
  // that window, else kAskRedis (as Decide; the answer goes to SettleSliding).
  Decision DecideSliding(CounterKey key, uint64_t count, uint64_t cost, int64_t window_ms,
                         int64_t window_end_ms, uint64_t left_ms, int64_t now_ms);

  // The answer for `taken` of the key's delta sent by a flush (0: a kAskRedis request's):
  // ok: the quota becomes (used, now + ttl); failed: `taken` goes back into the delta. True
  // when the caller owns the key now (a failure left a delta nobody owned): Track it.
  bool Settle(CounterKey key, uint64_t taken, bool ok, int64_t used, int64_t ttl_ms,
              int64_t now_ms);

  // SettleSliding: the same for a sliding key, whose answer is of the window ending at
  // `window_end_ms`: a synchronous call's [count, previous] (`previous` >= 0: the view
  // becomes that window's unless it is of a newer one; the same window keeps the larger
  // numbers) or a flush's count (`previous` -1: it refreshes a view of the same window only).
  // `wall_ms`: now, on the wall clock.
  bool SettleSliding(CounterKey key, uint64_t taken, bool ok, int64_t window_end_ms, int64_t count,
                     int64_t previous, int64_t wall_ms, int64_t now_ms);

  // A flush takes the key's delta (in flight now) and gives up its ownership; 0: nothing
  // to send (or the key was evicted).
  uint64_t TakeDelta(CounterKey key);

  // A sent delta whose answer will never be read (its owner went away): no longer in
  // flight, and the key's next request asks Redis for a fresh quota.
  void Abandon(CounterKey key, uint64_t taken);

  size_t capacity() const { return kShards * slots_per_shard_; }
  // Keys pushed out before their window ended; of them, keys whose unsent delta was lost.
  uint64_t evictions() const;
  uint64_t lost_deltas() const;

  // The key's state (tests); false when it has no slot.
  struct View {
    uint64_t used = 0;
    uint64_t delta = 0;
    uint64_t inflight = 0;
    int64_t reset_at_ms = 0;
    bool known = false;
    bool owned = false;
    uint64_t previous = 0;  // sliding
  };
  bool Peek(CounterKey key, View* out) const;

 private:
  struct Slot {
    CounterKey key;
    uint64_t used = 0;
    uint64_t delta = 0;
    uint64_t inflight = 0;
    int64_t reset_at_ms = 0;  // the remote window's end (sliding: on the wall clock)
    int64_t expires_ms = 0;   // free from then on unless Busy (0: never used)
    // Sliding: the previous window's count, capped at the limit (so below 2^53). The flags
    // share its word: a slot is one cache line.
    uint64_t previous : 62 = 0;
    uint64_t known : 1 = 0;  // a remote quota has been seen
    uint64_t owned : 1 = 0;  // a worker will flush it
  };
  static constexpr uint64_t kMaxPrevious = (uint64_t{1} << 62) - 1;
  static_assert(sizeof(Slot) <= kSlotBytes);
  struct alignas(64) Shard {
    mutable std::mutex mu;
    uint64_t evictions = 0;
    uint64_t lost = 0;
  };
  static bool Busy(const Slot& s) { return s.owned || s.delta != 0 || s.inflight != 0; }
  static size_t ShardOf(CounterKey key) { return key.hi & (kShards - 1); }
  Slot* Lookup(size_t shard, CounterKey key) const;
  // Found, else a free slot, else an evicted one (reset, key set).
  Slot* FindOrTake(size_t shard, CounterKey key, int64_t now_ms);

  size_t slots_per_shard_;
  std::unique_ptr<Shard[]> shards_;
  size_t bytes_ = 0;
  Slot* slots_ = nullptr;  // kShards runs of slots_per_shard_, in anonymous memory
};

// One worker's flusher for one plugin instance: the keys it owns, its timer, its calls in
// flight. Worker thread only; made in CreateWorkerState, destroyed with the worker state.
// Idle (no owned key) it costs nothing: the timer runs only while keys are owned. `sliding`:
// the instance's window_type is sliding, and a key's delta goes to the counter of the window
// current at the flush (the wall clock of `clock`), with the fixed script and an expiry of
// two windows (APISIX's commit).
class SyncWorker final : public RedisLink::Waiter {
 public:
  SyncWorker(uv_loop_s* loop, std::shared_ptr<SyncTable> table,
             std::unique_ptr<FixedWindowLink> link, int64_t interval_ms, const Clock& clock,
             bool sliding = false);
  ~SyncWorker();
  SyncWorker(const SyncWorker&) = delete;
  SyncWorker& operator=(const SyncWorker&) = delete;

  // This worker owns the key now (Decide's `claimed`, Settle's true): it is flushed at the
  // latest interval_ms from now. Copies `redis_key` into a reused buffer (no allocation once
  // the list has grown to the keys of one interval). Sliding: `redis_key` is the counter
  // before its window ("plugin-limit-count:<identity>", sliding_window.h).
  void Track(CounterKey key, std::string_view redis_key, uint64_t window_s);

  // Sends every owned key's delta now (the timer calls it). While the previous batch has
  // answers outstanding, nothing is sent and the timer is armed again.
  void Flush();

  size_t owned() const { return next_n_; }
  size_t in_flight() const { return outstanding_; }
  uint64_t failures() const { return failures_; }

  void OnRedisReply(const redisReply* reply, std::string_view error, uint64_t token) override;

 private:
  struct Entry {
    CounterKey key;
    std::string redis_key;
    uint64_t window_s = 0;
    uint64_t sent = 0;  // in the batch: sent and not answered yet
    // Sliding: the counter the delta was sent to, and that window's end (wall clock).
    std::string counter;
    int64_t window_end_ms = 0;
  };
  static void OnTimer(uv_timer_s* t);
  void Arm();
  // Sends `n` of `e`'s key (fixed: to its counter; sliding: to the current window's).
  void Send(Entry& e, uint64_t n, RedisLink::Waiter* waiter, uint64_t token);

  std::shared_ptr<SyncTable> table_;
  std::unique_ptr<FixedWindowLink> link_;
  int64_t interval_ms_;
  const Clock& clock_;
  bool sliding_;
  std::string previous_;  // sliding: the previous window's name, which a flush does not use
  uv_timer_s* timer_ = nullptr;
  bool armed_ = false;
  // Keys owned for the next flush, and the batch of the flush in flight (the two swap).
  std::vector<Entry> next_;
  size_t next_n_ = 0;
  std::vector<Entry> batch_;
  size_t batch_n_ = 0;
  size_t outstanding_ = 0;
  uint64_t failures_ = 0;
};

}  // namespace turnpike::plugins::limit_count
