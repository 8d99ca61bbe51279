// The worker's keep-alive pool lookup at 1 / 100 / 10k node addresses: what each proxied
// request pays to take an idle connection for its node and to put it back afterwards.
//
// BM_IdlePool: proxy/idle_pool.h (flat table, compact key, intrusive idle lists), the key
// computed from the node's sockaddr_storage as the request path does.
// BM_UnorderedMapBaseline: the pool before it, an std::unordered_map from the whole
// sockaddr_storage (PoolKey, hashed over its first 32 bytes) to a vector of connections.
// Both walk the addresses in turn (round robin over the nodes: each request's address is a
// different one), one idle connection per address.
// BM_ColdRoundRobin: the same walk over 10k nodes with the cache cleared between requests, with
// and without proxy/pick_prefetch.h loading the next picks' node, slot and connection.
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
#include "proxy/pick_prefetch.h"
#include "upstream/node_set.h"
#include "upstream/round_robin.h"

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

// ---------------------------------------------------------------- cold picks, prefetched

// A pooled connection as large as the worker's UpstreamConnection is (~0.7 KB: the libuv TCP
// and timer handles, the read buffer's bounds), one heap object each.
struct ColdConn : PoolHook {
  char rest[640] = {};
};

// What a proxied request does with its node under round robin over 10k nodes, with the cache
// cleared of them in between as the rest of a request (the kernel's socket work, the
// downstream side) does on the gateway: pick, read the node (its address, its text for the
// log), take its idle connection, write to it, put it back; then a read of every cache line of
// `sweep` KB of other memory. First arg 0: as before; 1: with proxy::PrefetchNextPicks after
// each pick. Both pay the same sweep, so their difference is the misses the prefetch hides.
// With no sweep the 10k nodes' ~9 MB still outgrow L2, but the prefetch has only the next
// request's few dozen nanoseconds to arrive in.
void BM_ColdRoundRobin(benchmark::State& state) {
  constexpr size_t kNodes = 10000;
  const bool prefetch = state.range(0) != 0;
  const size_t sweep = static_cast<size_t>(state.range(1)) << 10;
  auto set = std::make_shared<upstream::NodeSet>();
  const std::vector<sockaddr_storage> addrs = Addresses(kNodes);
  for (size_t i = 0; i < kNodes; ++i) {
    upstream::Node n;
    n.host = upstream::NodeText("10.0.0.1");
    n.port = 8080;
    std::memcpy(&n.addr, &addrs[i], sizeof(sockaddr_in));
    n.addr_len = sizeof(sockaddr_in);
    n.ip_text = n.host;
    n.host_header = upstream::NodeText("10.0.0.1:8080");
    set->nodes.push_back(std::move(n));
  }
  set->summary = upstream::SummarizeNodes(set->nodes);
  upstream::RoundRobinPicker picker;
  picker.Build(set);
  std::vector<std::unique_ptr<ColdConn>> conns;
  IdlePool pool;
  for (const upstream::Node& n : set->nodes) {
    conns.push_back(std::make_unique<ColdConn>());
    conns.back()->pool_addr = PoolAddr::Of(&n.addr.sa, n.addr_len);
    pool.Put(conns.back().get(), 32);
  }
  std::vector<char> other(std::max<size_t>(sweep, 1), 1);
  upstream::TriedSet none;
  uint64_t sum = 0;
  for (auto _ : state) {
    const uint32_t i = picker.Pick(none);
    if (prefetch) PrefetchNextPicks<sizeof(ColdConn)>(picker, set->nodes, pool);
    const upstream::Node& node = set->nodes[i];
    sum += node.port + node.ip_text.view().size() + node.host_header.view()[0];
    auto* c = static_cast<ColdConn*>(pool.Take(PoolAddr::Of(&node.addr.sa, node.addr_len)));
    for (size_t at = 0; at < sizeof(c->rest); at += 64) c->rest[at] = static_cast<char>(sum);
    pool.Put(c, 32);
    for (size_t at = 0; at < sweep; at += 64) sum += static_cast<unsigned char>(other[at]);
  }
  benchmark::DoNotOptimize(sum);
}
BENCHMARK(BM_ColdRoundRobin)->ArgsProduct({{0, 1}, {0, 256, 1024}});

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
