// The worker's keep-alive pool lookup at 1 / 100 / 10k node addresses: what each proxied
// request pays to take an idle connection for its node and to put it back afterwards.
//
// BM_IdlePool: proxy/idle_pool.h (flat table, compact key, intrusive idle lists), the key
// computed from the node's sockaddr_storage as the request path does.
// BM_UnorderedMapBaseline: the pool before it, an std::unordered_map from the whole
// sockaddr_storage (PoolKey, hashed over its first 32 bytes) to a vector of connections.
// Both walk the addresses in turn (round robin over the nodes: each request's address is a
// different one), one idle connection per address.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "proxy/idle_pool.h"

namespace turnpike::proxy {
namespace {

// Node addresses as the balancer's nodes hold them: 10.<i>:8080.
std::vector<sockaddr_storage> Addresses(int count) {
  std::vector<sockaddr_storage> out(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    auto* in = reinterpret_cast<sockaddr_in*>(&out[static_cast<size_t>(i)]);
    in->sin_family = AF_INET;
    in->sin_port = htons(8080);
    in->sin_addr.s_addr = htonl(0x0a000000u + static_cast<uint32_t>(i));
  }
  return out;
}

void BM_IdlePool(benchmark::State& state) {
  const std::vector<sockaddr_storage> addrs = Addresses(static_cast<int>(state.range(0)));
  std::vector<PoolHook> conns(addrs.size());
  IdlePool pool;
  for (size_t i = 0; i < addrs.size(); ++i) {
    conns[i].pool_addr =
        PoolAddr::Of(reinterpret_cast<const sockaddr*>(&addrs[i]), sizeof(sockaddr_in));
    pool.Put(&conns[i], 32);
  }
  size_t next = 0;
  for (auto _ : state) {
    const sockaddr_storage& node = addrs[next];
    PoolHook* c =
        pool.Take(PoolAddr::Of(reinterpret_cast<const sockaddr*>(&node), sizeof(sockaddr_in)));
    benchmark::DoNotOptimize(c);
    pool.Put(c, 32);
    next = next + 1 == addrs.size() ? 0 : next + 1;
  }
}
BENCHMARK(BM_IdlePool)->Arg(1)->Arg(100)->Arg(10000);

// ---------------------------------------------------------------- the map it replaced

struct MapKey {
  sockaddr_storage addr{};
  socklen_t len = 0;
  bool operator==(const MapKey& o) const {
    return len == o.len && std::memcmp(&addr, &o.addr, len) == 0;
  }
};
struct MapKeyHash {
  size_t operator()(const MapKey& k) const {
    uint64_t w[4] = {0, 0, 0, 0};
    std::memcpy(w, &k.addr, std::min<size_t>(k.len, sizeof(w)));
    uint64_t h = w[0] * 0x9e3779b97f4a7c15ull ^ w[1] * 0xc2b2ae3d27d4eb4full ^
                 w[2] * 0x165667b19e3779f9ull ^ w[3] * 0x27d4eb2f165667c5ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};
struct MapConn {
  MapKey key;
  size_t pool_index = 0;
};

void BM_UnorderedMapBaseline(benchmark::State& state) {
  const std::vector<sockaddr_storage> addrs = Addresses(static_cast<int>(state.range(0)));
  std::vector<std::unique_ptr<MapConn>> conns;
  std::unordered_map<MapKey, std::vector<MapConn*>, MapKeyHash> idle;
  for (const sockaddr_storage& a : addrs) {
    conns.push_back(std::make_unique<MapConn>());
    std::memcpy(&conns.back()->key.addr, &a, sizeof(sockaddr_in));
    conns.back()->key.len = sizeof(sockaddr_in);
    idle[conns.back()->key].push_back(conns.back().get());
  }
  size_t next = 0;
  for (auto _ : state) {
    // TakeIdle: the request's key, then find and pop.
    MapKey key;
    std::memcpy(&key.addr, &addrs[next], sizeof(sockaddr_in));
    key.len = sizeof(sockaddr_in);
    MapConn* c = nullptr;
    auto it = idle.find(key);
    if (it != idle.end() && !it->second.empty()) {
      c = it->second.back();
      it->second.pop_back();
    }
    benchmark::DoNotOptimize(c);
    // PutIdle: operator[] and push.
    std::vector<MapConn*>& list = idle[c->key];
    if (list.size() < 32) {
      c->pool_index = list.size();
      list.push_back(c);
    }
    next = next + 1 == addrs.size() ? 0 : next + 1;
  }
}
BENCHMARK(BM_UnorderedMapBaseline)->Arg(1)->Arg(100)->Arg(10000);

}  // namespace
}  // namespace turnpike::proxy

BENCHMARK_MAIN();
