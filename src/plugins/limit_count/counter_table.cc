#include "plugins/limit_count/counter_table.h"

#include <sys/mman.h>

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

// Both 64-bit lanes of the fingerprint of `a` then `b`, in one pass, 8 bytes at a time.
struct Lanes {
  uint64_t h1;
  uint64_t h2;
  void Feed(uint64_t k) {
    k = Mix(k);
    h1 = (h1 ^ k) * kMul;
    h2 = (h2 ^ (k + 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;
    h2 ^= h2 >> 33;
  }
  void Feed(std::string_view s) {
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t k;
      std::memcpy(&k, s.data() + i, 8);
      Feed(k);
    }
    uint64_t tail = 0;
    std::memcpy(&tail, s.data() + i, s.size() - i);
    Feed(tail ^
         (uint64_t{s.size() - i} << 56));  // the tail's length separates "ab"+"c" from "a"+"bc"
  }
};

uint64_t Finish(uint64_t h) {
  h ^= h >> 47;
  h *= kMul;
  h ^= h >> 47;
  return h;
}

}  // namespace

FingerprintSeed SeedFingerprint(std::string_view prefix) {
  Lanes l{0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL};
  l.Feed(prefix);  // its tail carries its length, so "ab"+"c" and "a"+"bc" part ways here
  return {l.h1, l.h2};
}

CounterKey Fingerprint(const FingerprintSeed& prefix, std::string_view key) {
  Lanes l{prefix.h1, prefix.h2};
  l.Feed(key);
  return {Finish(l.h1), Finish(l.h2 * kMul)};
}

CounterTable::CounterTable(size_t capacity) {
  // A power of two per shard, so that slot indexes are masks, not divisions.
  size_t per_shard = kProbe;
  while (per_shard * kShards < capacity) per_shard *= 2;
  slots_per_shard_ = per_shard;
  shards_ = std::make_unique<Shard[]>(kShards);
  // An all-zero Slot is a free one (expires_ms 0), and Slot is an implicit-lifetime type, so
  // fresh anonymous pages are a table of free slots. They are mapped as keys first touch
  // them; huge pages (where the kernel allows them) keep a scattered lookup from also
  // missing the TLB.
  bytes_ = kShards * per_shard * sizeof(Slot);
  void* mem = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw std::bad_alloc();
  madvise(mem, bytes_, MADV_HUGEPAGE);
  slots_ = static_cast<Slot*>(mem);
}

CounterTable::~CounterTable() { munmap(slots_, bytes_); }

CounterTable::Slot* CounterTable::Find(size_t shard, CounterKey key, int64_t now_ms, bool* fresh) {
  Slot* base = slots_ + shard * slots_per_shard_;
  const size_t mask = slots_per_shard_ - 1;
  size_t home = static_cast<size_t>(key.lo) & mask;
  Slot* free_slot = nullptr;
  Slot* oldest = nullptr;
  for (size_t i = 0; i < kProbe; ++i) {
    Slot* s = base + ((home + i) & mask);
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
  size_t shard = static_cast<size_t>(key.hi) & (kShards - 1);
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
  size_t shard = static_cast<size_t>(key.hi) & (kShards - 1);
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
    const Slot* base = slots_ + i * slots_per_shard_;
    for (size_t j = 0; j < slots_per_shard_; ++j) n += base[j].expires_ms > now_ms ? 1 : 0;
  }
  return n;
}

}  // namespace turnpike::plugins::limit_count
