#include "plugins/limit_count/counter_table.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace turnpike::plugins::limit_count {
namespace {

constexpr uint64_t kMul = 0xc6a4a7935bd1e995ULL;  // MurmurHash64A's multiplier

uint64_t Mix(uint64_t k) {
  k *= kMul;
  k ^= k >> 47;
  return k * kMul;
}

// One 64-bit lane of the fingerprint of `a` then `b`, 8 bytes at a time.
uint64_t HashLane(uint64_t seed, std::string_view a, std::string_view b) {
  uint64_t h = seed ^ ((a.size() + b.size()) * kMul);
  auto feed = [&h](std::string_view s) {
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t k;
      std::memcpy(&k, s.data() + i, 8);
      h ^= Mix(k);
      h *= kMul;
    }
    if (i < s.size()) {
      uint64_t k = 0;
      std::memcpy(&k, s.data() + i, s.size() - i);
      h ^= Mix(k ^ (s.size() - i));
      h *= kMul;
    }
    h ^= 0x9e3779b97f4a7c15ULL;  // separates "ab"+"c" from "a"+"bc"
  };
  feed(a);
  feed(b);
  h ^= h >> 47;
  h *= kMul;
  h ^= h >> 47;
  return h;
}

}  // namespace

CounterKey Fingerprint(std::string_view prefix, std::string_view key) {
  return {HashLane(0x243f6a8885a308d3ULL, prefix, key),
          HashLane(0x13198a2e03707344ULL, prefix, key)};
}

CounterTable::CounterTable(size_t capacity) {
  size_t per_shard = (capacity + kShards - 1) / kShards;
  per_shard = std::max(kProbe, (per_shard + kProbe - 1) / kProbe * kProbe);
  slots_per_shard_ = per_shard;
  shards_ = std::make_unique<Shard[]>(kShards);
  // An all-zero Slot is a free one (expires_ms 0), and Slot is an implicit-lifetime type.
  void* mem = std::calloc(kShards * per_shard, sizeof(Slot));
  if (mem == nullptr) throw std::bad_alloc();
  slots_.reset(static_cast<Slot*>(mem));
}

void CounterTable::Free::operator()(Slot* p) const { std::free(p); }

CounterTable::Slot* CounterTable::Find(size_t shard, CounterKey key, int64_t now_ms, bool* fresh) {
  Slot* base = slots_.get() + shard * slots_per_shard_;
  size_t home = static_cast<size_t>(key.lo % slots_per_shard_);
  Slot* free_slot = nullptr;
  Slot* oldest = nullptr;
  for (size_t i = 0; i < kProbe; ++i) {
    Slot* s = base + (home + i) % slots_per_shard_;
    bool expired = s->expires_ms <= now_ms;
    if (s->key == key && s->expires_ms != 0) {
      *fresh = expired;
      if (expired) *s = Slot{key};
      return s;
    }
    if (expired) {
      if (free_slot == nullptr) free_slot = s;
    } else if (oldest == nullptr || s->expires_ms < oldest->expires_ms) {
      oldest = s;
    }
  }
  Slot* s = free_slot;
  if (s == nullptr) {
    s = oldest;
    ++shards_[shard].evictions;
  }
  *s = Slot{key};
  *fresh = true;
  return s;
}

CounterTable::Fixed CounterTable::TakeFixed(CounterKey key, uint64_t limit, int64_t window_ms,
                                            int64_t now_ms, uint64_t cost) {
  size_t shard = static_cast<size_t>(key.hi % kShards);
  Fixed r;
  std::lock_guard<std::mutex> lock(shards_[shard].mu);
  bool fresh = false;
  Slot* s = Find(shard, key, now_ms, &fresh);
  if (fresh) {
    s->window = now_ms + window_ms;
    s->expires_ms = s->window;
    r.opened = true;
  }
  s->count += cost;
  r.used = s->count;
  r.allowed = s->count <= limit;
  r.window_end_ms = s->window;
  return r;
}

CounterTable::Sliding CounterTable::TakeSliding(CounterKey key, uint64_t limit, int64_t window_ms,
                                                int64_t now_ms, uint64_t cost) {
  size_t shard = static_cast<size_t>(key.hi % kShards);
  const int64_t id = now_ms / window_ms;
  const int64_t left_ms = window_ms - now_ms % window_ms;  // of the current window
  Sliding r;
  std::lock_guard<std::mutex> lock(shards_[shard].mu);
  bool fresh = false;
  Slot* s = Find(shard, key, now_ms, &fresh);
  if (fresh || s->window < id - 1) {
    s->previous = 0;
    s->count = 0;
  } else if (s->window == id - 1) {
    s->previous = s->count;
    s->count = 0;
  }
  s->window = id;
  s->expires_ms = (id + 2) * window_ms;  // it is the previous window until then
  if (s->count >= limit) {
    r.reset_ms = left_ms;
    return r;
  }
  // The previous window's count (capped at the limit: a racy overshoot is not punished
  // twice) at its rate, over the part of it the sliding window still covers.
  double last_rate =
      static_cast<double>(std::min(s->previous, limit)) / static_cast<double>(window_ms);
  double estimated_last = last_rate * static_cast<double>(left_ms);
  if (estimated_last + static_cast<double>(s->count) >= static_cast<double>(limit)) {
    double delay = left_ms;
    if (last_rate > 0) {
      delay = left_ms - static_cast<double>(limit - s->count) / last_rate;
    }
    r.reset_ms = static_cast<int64_t>(std::max(0.0, delay));
    return r;
  }
  s->count += cost;
  r.allowed = true;
  double remaining = static_cast<double>(limit) - static_cast<double>(s->count) - estimated_last;
  r.remaining = remaining > 0 ? static_cast<uint64_t>(remaining) : 0;
  r.reset_ms = left_ms;
  return r;
}

uint64_t CounterTable::evictions() const {
  uint64_t n = 0;
  for (size_t i = 0; i < kShards; ++i) {
    std::lock_guard<std::mutex> lock(shards_[i].mu);
    n += shards_[i].evictions;
  }
  return n;
}

size_t CounterTable::live(int64_t now_ms) const {
  size_t n = 0;
  for (size_t i = 0; i < kShards; ++i) {
    std::lock_guard<std::mutex> lock(shards_[i].mu);
    const Slot* base = slots_.get() + i * slots_per_shard_;
    for (size_t j = 0; j < slots_per_shard_; ++j) n += base[j].expires_ms > now_ms ? 1 : 0;
  }
  return n;
}

}  // namespace turnpike::plugins::limit_count
