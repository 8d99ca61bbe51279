// IdlePool, the worker's keep-alive table (proxy/idle_pool.h): keys, idle lists, the per-address
// limit, O(1) removal, entries that go with their addresses' connections, backward-shift
// deletion against a model under heavy churn, and no allocation once warm.
#include "proxy/idle_pool.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <tuple>
#include <vector>

#include "support/alloc_counter.h"

namespace turnpike::proxy {
namespace {

PoolAddr V4(uint32_t host_order_ip, uint16_t port) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(port);
  in.sin_addr.s_addr = htonl(host_order_ip);
  return PoolAddr::Of(reinterpret_cast<const sockaddr*>(&in), sizeof(in));
}

PoolAddr V6(const char* ip, uint16_t port, uint32_t scope = 0) {
  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  in6.sin6_port = htons(port);
  in6.sin6_scope_id = scope;
  inet_pton(AF_INET6, ip, &in6.sin6_addr);
  return PoolAddr::Of(reinterpret_cast<const sockaddr*>(&in6), sizeof(in6));
}

PoolHook* Conn(std::vector<std::unique_ptr<PoolHook>>* owned, const PoolAddr& addr) {
  owned->push_back(std::make_unique<PoolHook>());
  owned->back()->pool_addr = addr;
  return owned->back().get();
}

TEST(PoolAddrTest, FamilyPortAddressAndScopeMakeTheKey) {
  EXPECT_TRUE(V4(0x7f000001, 80).valid());
  EXPECT_EQ(V4(0x7f000001, 80), V4(0x7f000001, 80));
  EXPECT_NE(V4(0x7f000001, 80), V4(0x7f000001, 81));
  EXPECT_NE(V4(0x7f000001, 80), V4(0x7f000002, 80));
  EXPECT_TRUE(V6("::1", 80).valid());
  EXPECT_EQ(V6("fe80::1", 80, 2), V6("fe80::1", 80, 2));
  EXPECT_NE(V6("::1", 80), V6("::2", 80));
  EXPECT_NE(V6("2001:db8::1", 80), V6("2001:db8:0:0:1::", 80));  // either half counts
  EXPECT_NE(V6("fe80::1", 80, 2), V6("fe80::1", 80, 3));
  EXPECT_NE(V6("::ffff:127.0.0.1", 80), V4(0x7f000001, 80));
  // Bytes past the address (sockaddr_storage padding, sin_zero) are not part of it.
  sockaddr_storage a{};
  sockaddr_storage b{};
  std::memset(&b, 0xab, sizeof(b));
  for (sockaddr_storage* s : {&a, &b}) {
    auto* in = reinterpret_cast<sockaddr_in*>(s);
    in->sin_family = AF_INET;
    in->sin_port = htons(80);
    in->sin_addr.s_addr = htonl(0x0a000001);
  }
  EXPECT_EQ(PoolAddr::Of(reinterpret_cast<const sockaddr*>(&a), sizeof(sockaddr_in)),
            PoolAddr::Of(reinterpret_cast<const sockaddr*>(&b), sizeof(sockaddr_in)));
  // Not an IP address, or cut short: not poolable.
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  EXPECT_FALSE(PoolAddr::Of(reinterpret_cast<const sockaddr*>(&un), sizeof(un)).valid());
  EXPECT_FALSE(PoolAddr::Of(reinterpret_cast<const sockaddr*>(&a), 4).valid());
  EXPECT_FALSE(PoolAddr::Of(nullptr, 0).valid());
}

TEST(IdlePoolTest, TakesTheLastPutPerAddressUpToTheLimit) {
  std::vector<std::unique_ptr<PoolHook>> owned;
  IdlePool pool;
  const PoolAddr a = V4(0x7f000001, 80);
  const PoolAddr b = V6("::1", 80);
  EXPECT_EQ(pool.Take(a), nullptr);
  PoolHook* a1 = Conn(&owned, a);
  PoolHook* a2 = Conn(&owned, a);
  PoolHook* a3 = Conn(&owned, a);
  PoolHook* b1 = Conn(&owned, b);
  EXPECT_TRUE(pool.Put(a1, 2));
  EXPECT_FALSE(pool.Put(a1, 2)) << "already pooled";
  EXPECT_TRUE(pool.Put(a2, 2));
  EXPECT_FALSE(pool.Put(a3, 2)) << "the address has its 2 idle";
  EXPECT_FALSE(a3->pooled);
  EXPECT_TRUE(pool.Put(b1, 2));
  EXPECT_EQ(pool.addresses(), 2u);
  EXPECT_EQ(pool.idle(a), 2u);
  EXPECT_EQ(pool.Take(a), a2);  // most recently put first
  EXPECT_FALSE(a2->pooled);
  EXPECT_EQ(pool.Take(a), a1);
  EXPECT_EQ(pool.Take(a), nullptr);
  EXPECT_EQ(pool.addresses(), 2u) << "an emptied entry stays while its connections live";
  EXPECT_EQ(pool.Take(b), b1);
  EXPECT_FALSE(pool.Put(Conn(&owned, PoolAddr{}), 2)) << "not an IP address";
  EXPECT_FALSE(pool.Put(Conn(&owned, V4(0x7f000001, 81)), 0)) << "no pooling";
}

TEST(IdlePoolTest, PeekIdleTellsWhatTakeWouldReturnAndChangesNothing) {
  std::vector<std::unique_ptr<PoolHook>> owned;
  IdlePool pool;
  const PoolAddr a = V4(0x7f000001, 80);
  pool.PrefetchSlot(a);  // an empty table: nothing to load, no fault
  EXPECT_EQ(pool.PeekIdle(a), nullptr);
  PoolHook* a1 = Conn(&owned, a);
  PoolHook* a2 = Conn(&owned, a);
  ASSERT_TRUE(pool.Put(a1, 4));
  ASSERT_TRUE(pool.Put(a2, 4));
  pool.PrefetchSlot(a);
  pool.PrefetchSlot(V6("::1", 80));  // an address the table does not hold
  EXPECT_EQ(pool.PeekIdle(a), a2);
  EXPECT_EQ(pool.PeekIdle(a), a2) << "a peek takes nothing";
  EXPECT_TRUE(a2->pooled);
  EXPECT_EQ(pool.idle(a), 2u);
  EXPECT_EQ(pool.Take(a), a2);
  EXPECT_EQ(pool.PeekIdle(a), a1);
  EXPECT_EQ(pool.Take(a), a1);
  EXPECT_EQ(pool.PeekIdle(a), nullptr) << "the entry stays, with no idle connection";
  EXPECT_EQ(pool.PeekIdle(V4(0x7f000002, 80)), nullptr);
}

TEST(IdlePoolTest, RemoveUnlinksAnywhereInTheList) {
  std::vector<std::unique_ptr<PoolHook>> owned;
  IdlePool pool;
  const PoolAddr a = V4(0x0a000001, 8080);
  std::vector<PoolHook*> c;
  for (int i = 0; i < 5; ++i) {
    c.push_back(Conn(&owned, a));
    ASSERT_TRUE(pool.Put(c.back(), 10));
  }
  pool.Remove(c[2]);  // middle
  pool.Remove(c[4]);  // head (put last)
  pool.Remove(c[0]);  // tail
  pool.Remove(c[0]);  // not pooled any more: nothing
  EXPECT_EQ(pool.idle(a), 2u);
  EXPECT_EQ(pool.Take(a), c[3]);
  EXPECT_EQ(pool.Take(a), c[1]);
  EXPECT_EQ(pool.Take(a), nullptr);
  EXPECT_EQ(pool.idle(a), 0u);
}

TEST(IdlePoolTest, AnEntryGoesWhenAConnectionClosesAndNoneIsIdle) {
  std::vector<std::unique_ptr<PoolHook>> owned;
  IdlePool pool;
  const PoolAddr a = V4(0x0a000001, 80);
  PoolHook* a1 = Conn(&owned, a);
  PoolHook* a2 = Conn(&owned, a);
  ASSERT_TRUE(pool.Put(a1, 4));
  ASSERT_TRUE(pool.Put(a2, 4));
  pool.Remove(a1);
  pool.Release(a);  // a1 closed: a2 is still idle
  EXPECT_EQ(pool.addresses(), 1u);
  pool.Remove(a2);
  pool.Release(a);  // a2 closed: none idle
  EXPECT_EQ(pool.addresses(), 0u);
  pool.Release(a);  // no entry: nothing
  pool.Release(V4(0x0a000002, 80));
  EXPECT_EQ(pool.addresses(), 0u);
}

TEST(IdlePoolTest, TakeAllEmptiesEveryListOnce) {
  std::vector<std::unique_ptr<PoolHook>> owned;
  IdlePool pool;
  std::vector<PoolHook*> all;
  for (uint32_t i = 0; i < 100; ++i) {
    for (int k = 0; k < 3; ++k) {
      all.push_back(Conn(&owned, V4(0x0a000000 + i, 80)));
      ASSERT_TRUE(pool.Put(all.back(), 3));
    }
  }
  std::map<PoolHook*, int> seen;
  pool.TakeAll([&](PoolHook* c) {
    EXPECT_FALSE(c->pooled);
    ++seen[c];
    pool.Release(c->pool_addr);  // as the closes do, later
  });
  EXPECT_EQ(seen.size(), all.size());
  for (const auto& [c, n] : seen) EXPECT_EQ(n, 1);
  EXPECT_EQ(pool.addresses(), 0u);
  EXPECT_EQ(pool.Take(V4(0x0a000000, 80)), nullptr);
}

// Random puts, takes, removes and releases over addresses that come and go (node churn),
// checked against a plain model after every step: backward-shift deletion keeps every entry
// reachable, and the table grows as the address count needs.
TEST(IdlePoolTest, ChurnMatchesAModel) {
  std::mt19937 rng(3);
  std::vector<std::unique_ptr<PoolHook>> owned;
  IdlePool pool;
  std::map<std::tuple<uint64_t, uint64_t, uint64_t>, std::vector<PoolHook*>> model;  // idle
  std::map<std::tuple<uint64_t, uint64_t, uint64_t>, int> entries;  // open conns per address
  std::vector<PoolHook*> busy;
  auto key = [](const PoolAddr& a) { return std::make_tuple(a.w0, a.w1, a.w2); };
  constexpr size_t kLimit = 3;
  for (int step = 0; step < 100000; ++step) {
    // The live address range slides (addresses of nodes gone are not used again).
    const uint32_t base = static_cast<uint32_t>(step / 20);
    const uint32_t ip = base + static_cast<uint32_t>(rng() % 2000);
    const PoolAddr addr = rng() % 8 == 0 ? V6("2001:db8::1", static_cast<uint16_t>(ip % 60000))
                                         : V4(ip, static_cast<uint16_t>(80 + ip % 3));
    switch (rng() % 4) {
      case 0: {  // a request: take one, or open a new connection
        PoolHook* c = pool.Take(addr);
        auto& list = model[key(addr)];
        if (list.empty()) {
          ASSERT_EQ(c, nullptr);
          c = Conn(&owned, addr);
          ++entries[key(addr)];
        } else {
          ASSERT_EQ(c, list.back());
          list.pop_back();
        }
        busy.push_back(c);
        break;
      }
      case 1:  // a request ends: back to the pool or closed
        if (!busy.empty()) {
          const size_t i = rng() % busy.size();
          PoolHook* c = busy[i];
          busy[i] = busy.back();
          busy.pop_back();
          auto& list = model[key(c->pool_addr)];
          const bool kept = pool.Put(c, kLimit);
          ASSERT_EQ(kept, list.size() < kLimit);
          if (kept) {
            list.push_back(c);
          } else {
            pool.Release(c->pool_addr);
            if (--entries[key(c->pool_addr)] == 0 && list.empty()) {
              entries.erase(key(c->pool_addr));
            }
          }
        }
        break;
      default: {  // an idle connection closes (the node closed it, its idle timeout)
        auto& list = model[key(addr)];
        if (list.empty()) break;
        const size_t i = rng() % list.size();
        PoolHook* c = list[i];
        list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
        pool.Remove(c);
        pool.Release(addr);
        if (--entries[key(addr)] == 0) entries.erase(key(addr));
        break;
      }
    }
    if (step % 997 == 0) {
      // Every idle list as the model has it; every address the pool keeps is one with an
      // idle connection or an open one (an entry made and not released since).
      size_t idle_addresses = 0;
      for (const auto& [k, list] : model) {
        const PoolAddr a{std::get<0>(k), std::get<1>(k), std::get<2>(k)};
        ASSERT_EQ(pool.idle(a), list.size()) << "step " << step;
        if (!list.empty()) ++idle_addresses;
      }
      ASSERT_GE(pool.addresses(), idle_addresses);
      ASSERT_LE(pool.addresses(), entries.size());
    }
  }
  EXPECT_LE(pool.capacity(), 16384u) << "grown for the live addresses only";
}

TEST(IdlePoolTest, WarmTakeAndPutDoNotAllocate) {
  std::vector<std::unique_ptr<PoolHook>> owned;
  IdlePool pool;
  std::vector<PoolHook*> conns;
  for (uint32_t i = 0; i < 10000; ++i) {
    conns.push_back(Conn(&owned, V4(0x0a000000 + i, 80)));
    ASSERT_TRUE(pool.Put(conns.back(), 8));
  }
  const uint64_t before = turnpike::testing::ThreadAllocations();
  for (int round = 0; round < 3; ++round) {
    for (PoolHook* c : conns) {
      ASSERT_EQ(pool.Take(c->pool_addr), c);
      ASSERT_TRUE(pool.Put(c, 8));
    }
    for (size_t i = 0; i < conns.size(); i += 7) {
      pool.Remove(conns[i]);
      pool.Release(conns[i]->pool_addr);
      ASSERT_TRUE(pool.Put(conns[i], 8));
    }
  }
  EXPECT_EQ(turnpike::testing::ThreadAllocations() - before, 0u);
}

}  // namespace
}  // namespace turnpike::proxy
