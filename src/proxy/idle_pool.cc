#include "proxy/idle_pool.h"

#include <netinet/in.h>

#include <bit>
#include <cstring>

#include "base/prefetch.h"

namespace turnpike::proxy {

PoolAddr PoolAddr::Of(const sockaddr* addr, socklen_t len) {
  PoolAddr a;
  if (addr == nullptr) return a;
  if (addr->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    sockaddr_in in;
    std::memcpy(&in, addr, sizeof(in));
    a.w0 = uint64_t{AF_INET} << 48 | uint64_t{in.sin_port} << 32 | in.sin_addr.s_addr;
  } else if (addr->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    sockaddr_in6 in6;
    std::memcpy(&in6, addr, sizeof(in6));
    a.w0 = uint64_t{AF_INET6} << 48 | uint64_t{in6.sin6_port} << 32 | in6.sin6_scope_id;
    std::memcpy(&a.w1, &in6.sin6_addr, sizeof(a.w1));
    std::memcpy(&a.w2, reinterpret_cast<const char*>(&in6.sin6_addr) + sizeof(a.w1), sizeof(a.w2));
  }
  return a;
}

uint32_t IdlePool::Hash(const PoolAddr& a) {
  // Each word multiplied by its own odd constant, folded, mixed once more; the high half is
  // kept (Home() takes its top bits).
  uint64_t h = a.w0 * 0x9e3779b97f4a7c15ull ^ std::rotl(a.w1 * 0xc2b2ae3d27d4eb4full, 21) ^
               std::rotl(a.w2 * 0x165667b19e3779f9ull, 42);
  h ^= h >> 31;
  h *= 0xd6e8feb86659fd93ull;
  return static_cast<uint32_t>(h >> 32);
}

size_t IdlePool::Find(const PoolAddr& addr, uint32_t hash) const {
  if (slots_.empty()) return SIZE_MAX;
  for (size_t i = Home(hash);; i = (i + 1) & mask_) {
    const Entry& e = slots_[i];
    if (e.key == addr) return i;
    if (!e.key.valid()) return SIZE_MAX;  // the table is never full
  }
}

PoolHook* IdlePool::Take(const PoolAddr& addr) {
  const size_t i = Find(addr, Hash(addr));
  if (i == SIZE_MAX) return nullptr;
  Entry& e = slots_[i];
  PoolHook* c = e.head;
  if (c == nullptr) return nullptr;
  e.head = c->pool_next;
  if (e.head != nullptr) e.head->pool_prev = nullptr;
  --e.idle;
  c->pool_next = nullptr;
  c->pooled = false;
  return c;
}

void IdlePool::PrefetchSlot(const PoolAddr& addr) const {
  if (slots_.empty()) return;
  // The home slot and the line after it: a hit is most often found within two entries.
  base::PrefetchLines<base::kPrefetchWrite>(&slots_[Home(Hash(addr))], 2 * sizeof(Entry));
}

const PoolHook* IdlePool::PeekIdle(const PoolAddr& addr) const {
  const size_t i = Find(addr, Hash(addr));
  return i == SIZE_MAX ? nullptr : slots_[i].head;
}

bool IdlePool::Put(PoolHook* conn, size_t limit) {
  const PoolAddr& addr = conn->pool_addr;
  if (!addr.valid() || limit == 0 || conn->pooled) return false;
  const uint32_t hash = Hash(addr);
  size_t i = Find(addr, hash);
  if (i == SIZE_MAX) {
    if ((size_ + 1) * 4 > slots_.size() * 3) Grow();
    for (i = Home(hash); slots_[i].key.valid(); i = (i + 1) & mask_) {
    }
    slots_[i] = Entry{addr, nullptr, 0, hash};
    ++size_;
  }
  Entry& e = slots_[i];
  if (e.idle >= limit) return false;
  conn->pool_prev = nullptr;
  conn->pool_next = e.head;
  if (e.head != nullptr) e.head->pool_prev = conn;
  e.head = conn;
  ++e.idle;
  conn->pooled = true;
  return true;
}

void IdlePool::Remove(PoolHook* conn) {
  if (!conn->pooled) return;
  const size_t i = Find(conn->pool_addr, Hash(conn->pool_addr));
  if (i == SIZE_MAX) return;  // cannot happen: a pooled connection's entry exists
  Entry& e = slots_[i];
  if (conn->pool_prev != nullptr) {
    conn->pool_prev->pool_next = conn->pool_next;
  } else {
    e.head = conn->pool_next;
  }
  if (conn->pool_next != nullptr) conn->pool_next->pool_prev = conn->pool_prev;
  conn->pool_prev = conn->pool_next = nullptr;
  conn->pooled = false;
  --e.idle;
}

void IdlePool::Release(const PoolAddr& addr) {
  const size_t i = Find(addr, Hash(addr));
  if (i != SIZE_MAX && slots_[i].idle == 0) Erase(i);
}

size_t IdlePool::idle(const PoolAddr& addr) const {
  const size_t i = Find(addr, Hash(addr));
  return i == SIZE_MAX ? 0 : slots_[i].idle;
}

void IdlePool::Erase(size_t slot) {
  // Backward shift: each entry after the hole that may live there (the hole is not before
  // its home slot, cyclically) moves into it, until a free slot ends the run. No tombstone.
  size_t hole = slot;
  for (size_t j = (slot + 1) & mask_; slots_[j].key.valid(); j = (j + 1) & mask_) {
    const size_t home = Home(slots_[j].hash);
    if (((j - home) & mask_) >= ((j - hole) & mask_)) {
      slots_[hole] = slots_[j];
      hole = j;
    }
  }
  slots_[hole] = Entry{};
  --size_;
}

void IdlePool::Grow() {
  const size_t capacity = slots_.empty() ? 16 : slots_.size() * 2;
  std::vector<Entry> old(capacity);
  old.swap(slots_);
  mask_ = capacity - 1;
  shift_ = 32 - static_cast<uint32_t>(std::countr_zero(capacity));
  for (const Entry& e : old) {
    if (!e.key.valid()) continue;
    size_t i = Home(e.hash);
    while (slots_[i].key.valid()) i = (i + 1) & mask_;
    slots_[i] = e;
  }
}

}  // namespace turnpike::proxy
