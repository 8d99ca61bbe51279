// Peak-EWMA-style latency balancing over a NodeSet (`type: ewma`, reference §3.3), as
// APISIX's balancer/ewma.lua: each node keeps an exponentially weighted moving average of
// its response time, decayed with time (DECAY_TIME 10 s); a pick draws two distinct untried
// nodes at random and takes the one with the lower decayed average (power of two choices).
//
// As in APISIX:
//   - only a request's last attempt updates its node (APISIX's after_balance in the log
//     phase), with the time from the pick to the end of the response;
//   - update: ewma = ewma * w + rtt * (1 - w), w = exp(-(now - last update) / 10 s); the
//     score a pick reads decays toward 0 the same way (ewma * exp(-idle / 10 s)), so a slow
//     node that is left alone is tried again after a while; a node never measured scores 0;
//   - time has millisecond resolution (the worker loop's clock; APISIX: ngx.now()).
// Unlike APISIX, the averages are per worker and per upstream (APISIX keeps them in shared
// memory by address, across workers and upstreams), and nodes of weight 0 are picked only
// when nothing else is left (APISIX's ewma ignores weights). Priority groups as everywhere.
// A rebuild (the node set changed) starts from no measurements.
//
// A Picker (upstream/balancer.h); one worker, not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "upstream/balancer.h"
#include "upstream/node_set.h"

namespace turnpike::upstream {

class EwmaPicker final : public Picker {
 public:
  static constexpr double kDecayMs = 10000;  // APISIX's DECAY_TIME

  EwmaPicker() : Picker(BalancerType::kEwma) {}
  using Picker::Pick;

  // Worker, hot path. Two distinct random untried nodes of the highest group with any, the
  // lower score of the two at `request.now_ms` (the first drawn on a tie). Cost: a first
  // attempt is O(1) (two draws, two exp()); a retry (or with nodes down) counts the group's
  // untried nodes, O(nodes). No allocation.
  uint32_t Pick(const PickRequest& request) override;

  bool tracks_attempts() const override { return true; }
  // Folds a request's last attempt into its node's average (not final: nothing).
  void OnAttemptEnd(uint32_t index, uint64_t now_ms, uint64_t elapsed_ms, bool final) override;

  // Tests: node `index`'s score at `now_ms`, in seconds.
  double Score(uint32_t index, uint64_t now_ms) const;
  // Tests: seeds the random draws.
  void Seed(uint64_t seed) { rng_ = seed | 1; }

 private:
  struct NodeStat {
    double ewma = 0;  // seconds
    uint64_t touched_ms = 0;
    bool touched = false;
  };

  // Build(): O(nodes log nodes); O(nodes) without reading a node for a set whose summary
  // (NodeSet::summary) says one priority and one weight.
  void Rebuild(const NodeSet* previous) override;
  uint32_t PickAvoiding(const TriedSet& avoid, uint64_t now_ms);
  uint32_t Better(uint32_t a, uint32_t b, uint64_t now_ms) const {
    return Score(b, now_ms) < Score(a, now_ms) ? b : a;
  }
  uint64_t Next() {  // xorshift64*
    rng_ ^= rng_ >> 12;
    rng_ ^= rng_ << 25;
    rng_ ^= rng_ >> 27;
    return rng_ * 0x2545f4914f6cdd1dull;
  }
  // Uniform in [0, n), n > 0.
  uint32_t Below(uint32_t n) { return static_cast<uint32_t>(((Next() >> 32) * n) >> 32); }

  std::vector<NodeStat> stats_;                // by node index
  std::vector<std::vector<uint32_t>> groups_;  // weight > 0, by priority, highest first
  std::vector<uint32_t> zero_weight_;          // weight-0 nodes, highest priority first
  uint64_t rng_ = 0x9e3779b97f4a7c15ull;
  TriedSet avoid_;
};

}  // namespace turnpike::upstream
