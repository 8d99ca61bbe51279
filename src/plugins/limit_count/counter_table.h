// CounterTable: limit-count's `local` counters, one table for the whole process, shared by
// every worker (APISIX's `plugin-limit-count` shared dict: one counter per key per instance
// of the gateway, whichever worker serves the request).
//
// Layout: 64 shards, each a fixed array of 48-byte slots under its own mutex, open addressing
// over a window of 16 slots from the key's home slot. The key is a 128-bit fingerprint of the
// counter identity (owner, conf version, key), so slots are fixed-size and nothing is stored
// or compared byte by byte; two identities collide with probability ~n²/2¹²⁹ (1e-26 at one
// million keys). A request hashes its identity once and holds one shard's lock for a few
// dozen instructions; two workers meet on a lock only when their keys share a shard
// (1 in 64), so there is no global mutex, and nothing is allocated after construction.
//
// Expiry needs no sweep: a slot whose window has ended counts as free and is taken over by
// the next key that probes it. When a key finds neither its slot nor a free one in its
// window, it evicts the slot whose window ends first (the one closest to expiring, which
// approximates the shared dict's LRU eviction); the evicted key's next request starts a new
// window, as it does in APISIX after an LRU eviction. Capacity is fixed at construction
// (rounded up to a power of two): `slots * 48` bytes, 48 MiB for one million slots, mapped
// as keys arrive. Keep the capacity above the number of live keys (1.5x): a full probe
// window evicts a key whose window is still running.
//
// Thread-safe; every method may be called from any worker at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>

namespace turnpike::plugins::limit_count {

// A 128-bit fingerprint of a counter identity.
struct CounterKey {
  uint64_t hi = 0;
  uint64_t lo = 0;
  bool operator==(const CounterKey&) const = default;
};

// The hash state after an identity's prefix (an instance's owner and conf): made once, so a
// request hashes only its key.
struct FingerprintSeed {
  uint64_t h1 = 0;
  uint64_t h2 = 0;
};
FingerprintSeed SeedFingerprint(std::string_view prefix);

// Hashes the identity `prefix` + `key` (the two parts are not joined in memory).
CounterKey Fingerprint(const FingerprintSeed& prefix, std::string_view key);
inline CounterKey Fingerprint(std::string_view prefix, std::string_view key) {
  return Fingerprint(SeedFingerprint(prefix), key);
}

class CounterTable {
 public:
  static constexpr size_t kShards = 64;
  static constexpr size_t kProbe = 16;
  static constexpr size_t kSlotBytes = 48;

  // At least `capacity` slots (rounded up: a power of two per shard).
  explicit CounterTable(size_t capacity);
  ~CounterTable();
  CounterTable(const CounterTable&) = delete;
  CounterTable& operator=(const CounterTable&) = delete;

  // A fixed window, as resty.limit.count: the first request of a key opens a window of
  // `window_ms` (from that request, not aligned to the clock); each request adds `cost`; a
  // request that takes the count past `limit` is rejected (and still counted, as there).
  struct Fixed {
    bool allowed = false;
    uint64_t used = 0;          // count in the window after this request
    int64_t window_end_ms = 0;  // when the window ends
    bool opened = false;        // this request opened the window
  };
  Fixed TakeFixed(CounterKey key, uint64_t limit, int64_t window_ms, int64_t now_ms,
                  uint64_t cost = 1);

  // A sliding window, as APISIX's sliding-window limiter: windows aligned to multiples of
  // `window_ms` on the clock; the estimate is the previous window's count (at most `limit`)
  // spread over the part of it the sliding window still covers, plus this window's count. A
  // request is admitted while the estimate stays below `limit`; rejected ones are not counted.
  struct Sliding {
    bool allowed = false;
    uint64_t remaining = 0;  // admitted: floor(limit - count - estimated previous), >= 0
    int64_t reset_ms = 0;    // when to retry (rejected), or until this window ends (admitted)
  };
  Sliding TakeSliding(CounterKey key, uint64_t limit, int64_t window_ms, int64_t now_ms,
                      uint64_t cost = 1);

  size_t capacity() const { return kShards * slots_per_shard_; }
  // Keys pushed out before their window ended (the table was full around them).
  uint64_t evictions() const;
  // Slots in use at `now_ms` (a scan: tests and stats, not the hot path).
  size_t live(int64_t now_ms) const;

 private:
  struct Slot {
    CounterKey key;
    int64_t expires_ms = 0;  // the slot is free from then on (0: never used)
    // Fixed: the window's end and count. Sliding: the current window's id and count, and
    // the count of the window before it.
    int64_t window = 0;
    uint64_t count = 0;
    uint64_t previous = 0;
  };
  static_assert(sizeof(Slot) <= kSlotBytes);
  struct alignas(64) Shard {
    mutable std::mutex mu;
    uint64_t evictions = 0;
  };

  // The slot for `key` in its shard (locked by the caller): found, else a free one (reset),
  // else the one expiring first (evicted, reset). `fresh` says whether it was reset.
  Slot* Find(size_t shard, CounterKey key, int64_t now_ms, bool* fresh);

  size_t slots_per_shard_;
  std::unique_ptr<Shard[]> shards_;
  // kShards runs of slots_per_shard_ in anonymous memory (see the constructor): a table
  // holding few keys costs little memory.
  size_t bytes_ = 0;
  Slot* slots_ = nullptr;
};

}  // namespace turnpike::plugins::limit_count
