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
