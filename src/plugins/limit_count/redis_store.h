// RedisStore: what limit-count's Redis policies ask of Redis, whatever its topology: run the
// counter script on a key and answer a waiter. Two implementations: RedisLink (one server:
// `redis`, or the master sentinels name: `redis-sentinel`) and ClusterLink (a Redis Cluster:
// `redis-cluster`, one RedisLink per master it routes to).
//
// RedisLinks hands each worker the store of a configuration, shared by every limit-count
// instance of that worker naming the same servers and credentials, so a thousand routes on
// one Redis cost each worker one connection (per master, for a cluster).
//
// Worker thread only (the one whose loop the store runs on); destroyed there.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "plugins/limit_count/config.h"

struct redisReply;
struct uv_loop_s;

namespace turnpike::plugins::limit_count {

// Who waits for an answer. Called once per call, on the worker: with the reply, or with
// nullptr and an error (timeout, connection lost, Redis unreachable, too many redirects).
class RedisWaiter {
 public:
  virtual void OnRedisReply(const redisReply* reply, std::string_view error, uint64_t token) = 0;

 protected:
  ~RedisWaiter() = default;
};

class RedisStore {
 public:
  using Waiter = RedisWaiter;

  virtual ~RedisStore() = default;

  // limit-count's fixed-window script on `key`: adds `cost`, opening a window of `window_s`
  // seconds when the key has none; the answer is [count in the window, milliseconds left].
  // The waiter gets `token` back (the request's pause handle, packed), within redis_timeout.
  // May answer inside this call (the server is unreachable and its back-off has not passed).
  virtual void IncrementFixed(std::string_view key, uint64_t window_s, uint64_t cost,
                              Waiter* waiter, uint64_t token) = 0;

  // limit-count's sliding-window check-and-increment (APISIX's, sliding_window.h): reads the
  // previous window's counter (capped at `limit`) and the current one (0 while it has no
  // TTL), rejects when the current count is at the limit or the previous window's share of
  // what is left of this one (`left_ms` of `window_s`) plus the current count reaches it,
  // else adds `cost` (a new counter expires after two windows). The answer is [1 admitted or
  // 0 rejected, the current count (after the increment when admitted), the capped previous
  // count]. Same waiter, token and deadline rules as IncrementFixed. On one server: one
  // script call with both keys. On a cluster, where the two keys sit on different slots:
  // a GET of `previous` at its master, then the script on `current` with that value.
  struct SlidingCall {
    std::string_view current;   // "<counter>.<window id>.counter"
    std::string_view previous;  // the same for the window before
    uint64_t window_s = 0;
    uint64_t left_ms = 0;  // of the current window, in (0, window_s * 1000]
    uint64_t limit = 0;
    uint64_t cost = 1;
  };
  virtual void IncrementSliding(const SlidingCall& call, Waiter* waiter, uint64_t token) = 0;

  // `waiter` is going away: its calls in flight are answered to nobody.
  virtual void Forget(const Waiter* waiter) = 0;
};

// The stores of every worker, by configuration: instances share a store while any of them
// holds it.
class RedisLinks {
 public:
  explicit RedisLinks(int worker_count) : by_worker_(worker_count) {}
  // Worker `worker` only: a RedisLink, or a ClusterLink when `config` names cluster nodes.
  std::shared_ptr<RedisStore> Get(int worker, uv_loop_s* loop, const RedisConfig& config);

 private:
  std::vector<std::unordered_map<std::string, std::weak_ptr<RedisStore>>> by_worker_;
};

}  // namespace turnpike::plugins::limit_count
