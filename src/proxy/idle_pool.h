// IdlePool: a worker's idle keep-alive upstream connections, by the node address they go to.
//
// Per request the worker takes a connection for the node it picked (Take) and puts it back
// when the answer is read (Put), so the lookup runs twice per proxied request and, under an
// upstream of 10k nodes, over as many addresses. The table is flat: open addressing with
// linear probing over 40-byte entries (a compact key of family + port + address, the head of
// the address's idle list and its length), deletion by backward shift (no tombstones to build
// up under node churn). The idle connections of one address are an intrusive LIFO list
// through their PoolHook, so pooling allocates nothing per address or per connection; the
// table allocates only when it grows (its address count doubles past 3/4 of its capacity).
//
// An address keeps its entry while some connection to it is idle, and after its last idle
// connection was taken (the connection comes back at the end of its request: no erase and
// insert per request); Release() drops an entry that has no idle connection when a
// connection of that address closes, so addresses of nodes gone (node churn) do not stay.
//
// Only IPv4 and IPv6 addresses are pooled (nodes are IP addresses once resolved); any other
// address has an invalid PoolAddr and Put() refuses it.
//
// Thread rules: worker scope, not thread-safe. Costs: Take, Put, Remove, Release, PeekIdle
// are O(1) expected (one hash of three words, a probe over adjacent entries); TakeAll is
// O(capacity + idle connections).
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace turnpike::proxy {

// A node address as the pool keys it: family, port, IPv4 or IPv6 address, IPv6 scope id.
struct PoolAddr {
  uint64_t w0 = 0;  // family << 48 | port << 32 | (IPv4 address or IPv6 scope id); 0: invalid
  uint64_t w1 = 0;  // IPv6 address, first and second half (0 for IPv4)
  uint64_t w2 = 0;

  // The key of `addr` (`len` bytes); invalid when it is neither AF_INET nor AF_INET6 (or too
  // short for its family).
  static PoolAddr Of(const sockaddr* addr, socklen_t len);
  bool valid() const { return w0 != 0; }
  bool operator==(const PoolAddr&) const = default;
};

// What a pooled connection carries for the pool (UpstreamConnection derives from it).
struct PoolHook {
  PoolAddr pool_addr;  // set once, before the connection is first pooled
  // The address's idle list while pooled (most recently put first); null otherwise.
  PoolHook* pool_prev = nullptr;
  PoolHook* pool_next = nullptr;
  bool pooled = false;
};

class IdlePool {
 public:
  IdlePool() = default;
  IdlePool(const IdlePool&) = delete;
  IdlePool& operator=(const IdlePool&) = delete;

  // The idle connection of `addr` put last, taken out of the pool, or null.
  PoolHook* Take(const PoolAddr& addr);
  // Pools `conn` (not pooled, pool_addr set): false, and nothing changes, when its address
  // already has `limit` idle connections or is not valid. May allocate only when a new
  // address makes the table grow.
  bool Put(PoolHook* conn, size_t limit);
  // Takes `conn` out of the pool if it is in it (the node closed it, its idle timeout).
  void Remove(PoolHook* conn);
  // A connection of `addr` closed: the address's entry goes if none of its connections is
  // idle.
  void Release(const PoolAddr& addr);
  // Empties the pool's lists (entries stay until Release) and then calls f(conn) for every
  // connection that was idle; f may use the pool.
  template <typename F>
  void TakeAll(F&& f) {
    PoolHook* all = nullptr;
    for (Entry& e : slots_) {
      if (!e.key.valid()) continue;
      while (e.head != nullptr) {
        PoolHook* c = e.head;
        e.head = c->pool_next;
        c->pooled = false;
        c->pool_prev = nullptr;
        c->pool_next = all;
        all = c;
      }
      e.idle = 0;
    }
    while (all != nullptr) {
      PoolHook* c = all;
      all = c->pool_next;
      c->pool_next = nullptr;
      f(c);
    }
  }

  // Hints for a Take(addr) to come, a request or two from now (prefetching only: nothing
  // changes). PrefetchSlot starts loading the cache lines of the address's home slot;
  // PeekIdle returns the connection Take(addr) would return now, or null: a probe, which
  // costs a cache miss unless PrefetchSlot's lines have arrived.
  void PrefetchSlot(const PoolAddr& addr) const;
  const PoolHook* PeekIdle(const PoolAddr& addr) const;

  // Addresses with an entry.
  size_t addresses() const { return size_; }
  // Idle connections of `addr` (tests).
  size_t idle(const PoolAddr& addr) const;
  // Entries the table has room for (tests, benchmarks).
  size_t capacity() const { return slots_.size(); }

 private:
  struct Entry {
    PoolAddr key;  // invalid: a free slot
    PoolHook* head = nullptr;
    uint32_t idle = 0;
    uint32_t hash = 0;  // the key's hash, high half: its home slot, without rehashing
  };

  static uint32_t Hash(const PoolAddr& a);
  size_t Home(uint32_t hash) const { return static_cast<size_t>(uint64_t{hash} >> shift_); }
  // The slot of `addr`, or SIZE_MAX.
  size_t Find(const PoolAddr& addr, uint32_t hash) const;
  void Erase(size_t slot);
  void Grow();

  std::vector<Entry> slots_;  // empty, or a power of two of at least 16
  size_t mask_ = 0;
  uint32_t shift_ = 32;  // 32 - log2(capacity)
  size_t size_ = 0;
};

}  // namespace turnpike::proxy
