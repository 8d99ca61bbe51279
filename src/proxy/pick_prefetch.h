// PrefetchNextPicks: what a worker's next round-robin picks will touch, loaded ahead.
//
// With an upstream of 10k nodes taken in turn, each request touches a node, a pool slot and an
// idle connection that the requests in between have pushed out of the cache: ~430 ns of cache
// misses a request on the gateway's worker, measured by symbol (docs/benchmarks.md). A picker
// that can tell its next picks (upstream::Picker::Ahead) lets the worker load them beforehand,
// in a pipeline where each stage uses what the stage before loaded one pick earlier:
//   - three picks ahead, the node (its cache lines);
//   - two picks ahead, its pool slot (the node's address is cached by then: hashed, the slot's
//     lines loaded);
//   - one pick ahead, its idle connection (the slot is cached by then: the connection it holds,
//     its first `ConnBytes` bytes loaded for writing).
// Nothing changes: the pool is only peeked at, and a wrong guess (a retry, a rebuild, nodes
// marked down) costs the loads and nothing else.
//
// Worker scope (the picker and the pool are the worker's). Cost: three Ahead() calls, two
// hashes, one probe and ~15 prefetch instructions; no allocation, no wait.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/prefetch.h"
#include "proxy/idle_pool.h"
#include "upstream/balancer.h"
#include "upstream/node_set.h"

namespace turnpike::proxy {

// After a first-attempt pick from `picker` (built from `nodes`); `ConnBytes`: the size of the
// object a PoolHook of `pool` starts (the worker's UpstreamConnection).
template <size_t ConnBytes>
void PrefetchNextPicks(const upstream::Picker& picker, const upstream::NodeList& nodes,
                       const IdlePool& pool) {
  constexpr uint32_t kNone = upstream::Picker::kNone;
  if (const uint32_t i = picker.Ahead(3); i != kNone) {
    base::PrefetchLines(&nodes[i], sizeof(upstream::Node));
  }
  if (const uint32_t i = picker.Ahead(2); i != kNone) {
    pool.PrefetchSlot(PoolAddr::Of(&nodes[i].addr.sa, nodes[i].addr_len));
  }
  if (const uint32_t i = picker.Ahead(1); i != kNone) {
    if (const PoolHook* idle = pool.PeekIdle(PoolAddr::Of(&nodes[i].addr.sa, nodes[i].addr_len))) {
      base::PrefetchLines<base::kPrefetchWrite>(idle, ConnBytes);
    }
  }
}

}  // namespace turnpike::proxy
