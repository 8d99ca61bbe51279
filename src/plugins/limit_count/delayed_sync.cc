#include "plugins/limit_count/delayed_sync.h"

#include <hiredis/hiredis.h>
#include <sys/mman.h>
#include <uv.h>

#include <algorithm>
#include <charconv>
#include <new>

#include "plugins/limit_count/sliding_window.h"

namespace turnpike::plugins::limit_count {
namespace {

bool Integer(const redisReply* r, int64_t* out) {
  if (r->type == REDIS_REPLY_INTEGER) {
    *out = r->integer;
    return true;
  }
  if (r->type == REDIS_REPLY_STRING) {
    auto [p, ec] = std::from_chars(r->str, r->str + r->len, *out);
    return ec == std::errc() && p == r->str + r->len;
  }
  return false;
}

// The answer nobody reads: a departing SyncWorker's last deltas. Stateless, so one object
// serves every worker.
class DropWaiter final : public RedisLink::Waiter {
 public:
  void OnRedisReply(const redisReply*, std::string_view, uint64_t) override {}
};
DropWaiter drop_waiter;

}  // namespace

bool ParseWindowReply(const redisReply* reply, int64_t* count, int64_t* ttl_ms) {
  return reply != nullptr && reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
         Integer(reply->element[0], count) && Integer(reply->element[1], ttl_ms);
}

// ---------------------------------------------------------------- SyncTable

SyncTable::SyncTable(size_t capacity) {
  size_t per_shard = kProbe;
  while (per_shard * kShards < capacity) per_shard *= 2;
  slots_per_shard_ = per_shard;
  shards_ = std::make_unique<Shard[]>(kShards);
  // All-zero slots are free ones (expires_ms 0, nothing unsent); fresh anonymous pages are
  // zero and mapped as keys first touch them.
  bytes_ = kShards * per_shard * sizeof(Slot);
  void* mem = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw std::bad_alloc();
  slots_ = static_cast<Slot*>(mem);
}

SyncTable::~SyncTable() { munmap(slots_, bytes_); }

SyncTable::Slot* SyncTable::Lookup(size_t shard, CounterKey key) const {
  Slot* base = slots_ + shard * slots_per_shard_;
  const size_t mask = slots_per_shard_ - 1;
  size_t home = static_cast<size_t>(key.lo) & mask;
  for (size_t i = 0; i < kProbe; ++i) {
    Slot* s = base + ((home + i) & mask);
    if (s->key == key && s->expires_ms != 0) return s;
  }
  return nullptr;
}

SyncTable::Slot* SyncTable::FindOrTake(size_t shard, CounterKey key, int64_t now_ms) {
  Slot* base = slots_ + shard * slots_per_shard_;
  const size_t mask = slots_per_shard_ - 1;
  size_t home = static_cast<size_t>(key.lo) & mask;
  Slot* free_slot = nullptr;
  Slot* idle = nullptr;  // nothing unsent: evicting it loses no count
  Slot* busy = nullptr;
  for (size_t i = 0; i < kProbe; ++i) {
    Slot* s = base + ((home + i) & mask);
    if (s->key == key && s->expires_ms != 0) return s;
    if (Busy(*s)) {
      if (busy == nullptr || s->expires_ms < busy->expires_ms) busy = s;
    } else if (s->expires_ms <= now_ms) {
      if (free_slot == nullptr) free_slot = s;
    } else if (idle == nullptr || s->expires_ms < idle->expires_ms) {
      idle = s;
    }
  }
  Slot* s = free_slot;
  if (s == nullptr) {
    s = idle != nullptr ? idle : busy;
    Shard& sh = shards_[shard];
    ++sh.evictions;
    if (s->delta != 0) ++sh.lost;
  }
  *s = Slot{};
  s->key = key;
  s->expires_ms = now_ms + 1;  // in use; set properly by the caller
  return s;
}

SyncTable::Decision SyncTable::Decide(CounterKey key, uint64_t count, uint64_t cost,
                                      int64_t window_ms, int64_t now_ms) {
  const size_t shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shards_[shard].mu);
  Slot* s = FindOrTake(shard, key, now_ms);
  Decision d;
  if (!s->known || s->reset_at_ms <= now_ms) {
    // No quota, or its window has passed: Redis decides (the delta goes with the next flush).
    d.kind = Decision::kAskRedis;
    s->expires_ms = std::max(s->expires_ms, now_ms + window_ms);
    return d;
  }
  uint64_t seen = s->used + s->delta + s->inflight;
  d.reset_ms = s->reset_at_ms - now_ms;
  if (seen <= count && cost <= count - seen) {
    d.kind = Decision::kAdmit;
    s->delta += cost;
    d.remaining = count - seen - cost;
    if (!s->owned) {
      s->owned = true;
      d.claimed = true;
    }
  } else {
    d.kind = Decision::kReject;
  }
  return d;
}

SyncTable::Decision SyncTable::DecideSliding(CounterKey key, uint64_t count, uint64_t cost,
                                             int64_t window_ms, int64_t window_end_ms,
                                             uint64_t left_ms, int64_t now_ms) {
  const size_t shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shards_[shard].mu);
  Slot* s = FindOrTake(shard, key, now_ms);
  Decision d;
  if (!s->known || s->reset_at_ms != window_end_ms) {
    // No view, or one of another window (a roll-over): Redis decides and reads both counts.
    d.kind = Decision::kAskRedis;
    s->expires_ms = std::max(s->expires_ms, now_ms + window_ms);
    return d;
  }
  const uint64_t seen = s->used + s->delta + s->inflight;
  const uint64_t previous = std::min<uint64_t>(s->previous, count);
  d.previous = previous;
  d.count = seen;
  // The sliding script's check, on the local view (RedisStore::IncrementSliding).
  const double share =
      static_cast<double>(previous) * static_cast<double>(left_ms) / static_cast<double>(window_ms);
  if (seen < count && share + static_cast<double>(seen) < static_cast<double>(count)) {
    d.kind = Decision::kAdmit;
    s->delta += cost;
    d.count = seen + cost;
    if (!s->owned) {
      s->owned = true;
      d.claimed = true;
    }
  } else {
    d.kind = Decision::kReject;
  }
  return d;
}

bool SyncTable::SettleSliding(CounterKey key, uint64_t taken, bool ok, int64_t window_end_ms,
                              int64_t count, int64_t previous, int64_t wall_ms, int64_t now_ms) {
  const size_t shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shards_[shard].mu);
  Slot* s = Lookup(shard, key);
  if (s == nullptr) return false;  // evicted meanwhile
  s->inflight -= std::min(s->inflight, taken);
  if (ok) {
    const auto c = static_cast<uint64_t>(std::max<int64_t>(0, count));
    const uint64_t p =
        std::min(static_cast<uint64_t>(std::max<int64_t>(0, previous)), kMaxPrevious);
    if (s->known && s->reset_at_ms == window_end_ms) {
      // Answers on different workers' connections race; within one window counts only grow.
      s->used = std::max(s->used, c);
      if (previous >= 0) s->previous = std::max<uint64_t>(s->previous, p);
    } else if (previous >= 0 && (!s->known || window_end_ms > s->reset_at_ms)) {
      s->used = c;
      s->previous = p;
      s->reset_at_ms = window_end_ms;
      s->known = true;
    }
    // A flush's answer of another window leaves the view alone: a request of the flush's
    // window asks Redis for both counts.
    s->expires_ms = std::max(s->expires_ms, now_ms + std::max<int64_t>(1, window_end_ms - wall_ms));
    return false;
  }
  s->delta += taken;  // not lost: sent again with the next flush
  if (s->delta != 0 && !s->owned) {
    s->owned = true;
    return true;
  }
  return false;
}

bool SyncTable::Settle(CounterKey key, uint64_t taken, bool ok, int64_t used, int64_t ttl_ms,
                       int64_t now_ms) {
  const size_t shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shards_[shard].mu);
  Slot* s = Lookup(shard, key);
  if (s == nullptr) return false;  // evicted meanwhile
  s->inflight -= std::min(s->inflight, taken);
  if (ok) {
    uint64_t count = static_cast<uint64_t>(std::max<int64_t>(0, used));
    int64_t reset_at = now_ms + std::max<int64_t>(0, ttl_ms);
    // Answers on different workers' connections race: within one Redis window (whose end
    // does not move, and a new window ends at least a second later) the count only grows,
    // so an older, smaller answer does not undo a newer one.
    bool same_window =
        s->known && reset_at - s->reset_at_ms < 1000 && s->reset_at_ms - reset_at < 1000;
    s->used = same_window ? std::max(s->used, count) : count;
    s->reset_at_ms = reset_at;
    s->known = true;
    s->expires_ms = std::max(s->reset_at_ms, now_ms + 1);
    return false;
  }
  s->delta += taken;  // not lost: sent again with the next flush
  if (s->delta != 0 && !s->owned) {
    s->owned = true;
    return true;
  }
  return false;
}

uint64_t SyncTable::TakeDelta(CounterKey key) {
  const size_t shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shards_[shard].mu);
  Slot* s = Lookup(shard, key);
  if (s == nullptr) return 0;
  uint64_t d = s->delta;
  s->delta = 0;
  s->inflight += d;
  s->owned = false;
  return d;
}

void SyncTable::Abandon(CounterKey key, uint64_t taken) {
  const size_t shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shards_[shard].mu);
  Slot* s = Lookup(shard, key);
  if (s == nullptr) return;
  s->inflight -= std::min(s->inflight, taken);
  s->known = false;
}

uint64_t SyncTable::evictions() const {
  uint64_t n = 0;
  for (size_t i = 0; i < kShards; ++i) {
    std::lock_guard<std::mutex> lock(shards_[i].mu);
    n += shards_[i].evictions;
  }
  return n;
}

uint64_t SyncTable::lost_deltas() const {
  uint64_t n = 0;
  for (size_t i = 0; i < kShards; ++i) {
    std::lock_guard<std::mutex> lock(shards_[i].mu);
    n += shards_[i].lost;
  }
  return n;
}

bool SyncTable::Peek(CounterKey key, View* out) const {
  const size_t shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shards_[shard].mu);
  const Slot* s = Lookup(shard, key);
  if (s == nullptr) return false;
  out->used = s->used;
  out->delta = s->delta;
  out->inflight = s->inflight;
  out->reset_at_ms = s->reset_at_ms;
  out->known = s->known != 0;
  out->owned = s->owned != 0;
  out->previous = s->previous;
  return true;
}

// ---------------------------------------------------------------- SyncWorker

SyncWorker::SyncWorker(uv_loop_s* loop, std::shared_ptr<SyncTable> table,
                       std::unique_ptr<FixedWindowLink> link, int64_t interval_ms,
                       const Clock& clock, bool sliding)
    : table_(std::move(table)),
      link_(std::move(link)),
      interval_ms_(interval_ms),
      clock_(clock),
      sliding_(sliding) {
  timer_ = new uv_timer_t;
  uv_timer_init(loop, timer_);
  timer_->data = this;
}

SyncWorker::~SyncWorker() {
  link_->Forget(this);
  // Calls in flight: their answers go to nobody now; the keys ask Redis again.
  for (size_t i = 0; i < batch_n_; ++i) {
    if (batch_[i].sent != 0) table_->Abandon(batch_[i].key, batch_[i].sent);
  }
  // Owned deltas: sent without waiting (a reload that replaced this instance; shutdown).
  for (size_t i = 0; i < next_n_; ++i) {
    Entry& e = next_[i];
    uint64_t d = table_->TakeDelta(e.key);
    if (d == 0) continue;
    Send(e, d, &drop_waiter, 0);
    table_->Abandon(e.key, d);
  }
  uv_timer_stop(timer_);
  timer_->data = nullptr;
  uv_close(reinterpret_cast<uv_handle_t*>(timer_),
           [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
}

void SyncWorker::Send(Entry& e, uint64_t n, RedisLink::Waiter* waiter, uint64_t token) {
  if (!sliding_) {
    link_->IncrementFixed(e.redis_key, e.window_s, n, waiter, token);
    return;
  }
  SlidingKeys k = MakeSlidingKeys(e.redis_key, e.window_s, clock_.WallMs(), &e.counter, &previous_);
  e.window_end_ms = (k.window_id + 1) * static_cast<int64_t>(e.window_s * 1000);
  // APISIX's commit: added whatever the count (these requests were admitted already), a new
  // counter expiring after two windows; the fixed script does just that with twice the window.
  link_->IncrementFixed(e.counter, 2 * e.window_s, n, waiter, token);
}

void SyncWorker::Arm() {
  if (armed_) return;
  armed_ = true;
  uv_timer_start(timer_, OnTimer, static_cast<uint64_t>(interval_ms_), 0);
}

void SyncWorker::OnTimer(uv_timer_t* t) {
  auto* self = static_cast<SyncWorker*>(t->data);
  if (self == nullptr) return;
  self->armed_ = false;
  self->Flush();
}

void SyncWorker::Track(CounterKey key, std::string_view redis_key, uint64_t window_s) {
  if (next_n_ == next_.size()) next_.emplace_back();
  Entry& e = next_[next_n_++];
  e.key = key;
  e.redis_key.assign(redis_key);
  e.window_s = window_s;
  e.sent = 0;
  Arm();
}

void SyncWorker::Flush() {
  if (outstanding_ > 0) {
    // The last batch is still waiting (Redis slower than the interval): the owned keys keep
    // their deltas until the next tick.
    if (next_n_ > 0) Arm();
    return;
  }
  if (armed_) {
    uv_timer_stop(timer_);
    armed_ = false;
  }
  std::swap(next_, batch_);
  batch_n_ = next_n_;
  next_n_ = 0;
  for (size_t i = 0; i < batch_n_; ++i) {
    Entry& e = batch_[i];
    e.sent = table_->TakeDelta(e.key);
    if (e.sent == 0) continue;
    ++outstanding_;
    // May answer inside the call (Redis unreachable): the key goes back to next_.
    Send(e, e.sent, this, i);
  }
}

void SyncWorker::OnRedisReply(const redisReply* reply, std::string_view /*error*/, uint64_t token) {
  if (token >= batch_n_ || outstanding_ == 0) return;
  Entry& e = batch_[token];
  int64_t used = 0;
  int64_t ttl_ms = 0;
  bool ok = ParseWindowReply(reply, &used, &ttl_ms);
  if (!ok) ++failures_;
  uint64_t sent = e.sent;
  e.sent = 0;
  --outstanding_;
  bool claimed = sliding_ ? table_->SettleSliding(e.key, sent, ok, e.window_end_ms, used, -1,
                                                  clock_.WallMs(), clock_.MonotonicMs())
                          : table_->Settle(e.key, sent, ok, used, ttl_ms, clock_.MonotonicMs());
  if (claimed) {
    Track(e.key, e.redis_key, e.window_s);
  }
}

}  // namespace turnpike::plugins::limit_count
