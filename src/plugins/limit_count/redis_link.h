// RedisLink: one worker's connection to one Redis server for limit-count's `redis` policy:
// hiredis's async context on the worker's libuv loop, every request's script call pipelined
// on it (many in flight, answers in order), with a deadline per call (redis_timeout), and a
// reconnect with back-off after a failure.
//
// Shared by every limit-count instance of the worker that names the same server, database
// and credentials (RedisLinks below), so a thousand routes on one Redis cost each worker one
// connection.
//
// With sentinels (redis-sentinel), the server is the master a sentinel names: before the
// first connect, and again after the master's connection failed, the link asks the
// sentinels in turn (`SENTINEL get-master-addr-by-name`, within redis_connect_timeout each);
// calls made meanwhile wait, unsent, under their own deadlines.
//
// Worker thread only (the one whose loop it runs on); destroyed there.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "plugins/limit_count/config.h"

struct redisAsyncContext;
struct redisReply;
struct uv_loop_s;
struct uv_timer_s;

namespace turnpike::plugins::limit_count {

class RedisLink {
 public:
  // Who waits for an answer. Called once per Call(), on the worker: with the reply, or with
  // nullptr and an error (timeout, connection lost, Redis unreachable).
  class Waiter {
   public:
    virtual void OnRedisReply(const redisReply* reply, std::string_view error, uint64_t token) = 0;

   protected:
    ~Waiter() = default;
  };

  RedisLink(uv_loop_s* loop, const RedisConfig& config);
  ~RedisLink();
  RedisLink(const RedisLink&) = delete;
  RedisLink& operator=(const RedisLink&) = delete;

  // limit-count's fixed-window script on `key`: adds `cost`, opening a window of `window_s`
  // seconds when the key has none; the answer is [count in the window, milliseconds left].
  // The waiter gets `token` back (the request's pause handle, packed). Fails at once (inside
  // this call) while the server is unreachable and the back-off has not passed.
  void IncrementFixed(std::string_view key, uint64_t window_s, uint64_t cost, Waiter* waiter,
                      uint64_t token);

  // `waiter` is going away: its calls in flight are answered to nobody.
  void Forget(const Waiter* waiter);

  // Calls in flight (tests).
  size_t in_flight() const { return count_; }

 private:
  struct Pending {
    bool internal = false;     // a call of the link's own (AUTH, SELECT, SCRIPT LOAD)
    bool sent = false;         // false: waiting for the master's address (sentinels)
    Waiter* waiter = nullptr;  // nullptr: forgotten (its waiter went away), or internal
    uint64_t token = 0;
    int64_t deadline_ms = 0;
    // For a NOSCRIPT answer: the call is sent again as EVAL.
    std::string key;
    uint64_t window_s = 0;
    uint64_t cost = 0;
  };

  enum class Readiness { kReady, kWaiting, kDown };
  Readiness EnsureConnected();
  void ConnectTo(const std::string& host, int port);
  // Sentinels: asks the next one for the master's address.
  void AskSentinel();
  void DropSentinel();
  static void OnSentinelReply(redisAsyncContext* c, void* reply, void* privdata);
  void Send(Pending p, bool eval);
  void SendInternal(std::initializer_list<std::string_view> args);
  void Push(Pending p);
  Pending Pop();
  void ArmTimer();
  // The connection failed (error, timeout, lost): every call in flight fails with `error`,
  // and the next connect waits for the back-off.
  void Reset(std::string_view error);

  static void OnReply(redisAsyncContext* c, void* reply, void* privdata);
  static void OnConnect(const redisAsyncContext* c, int status);
  static void OnDisconnect(const redisAsyncContext* c, int status);
  static void OnTimer(uv_timer_s* t);

  uv_loop_s* loop_;
  RedisConfig config_;
  redisAsyncContext* ctx_ = nullptr;
  redisAsyncContext* sentinel_ = nullptr;  // asking this sentinel
  size_t next_sentinel_ = 0;
  size_t sentinels_asked_ = 0;  // in this round
  int64_t sentinel_deadline_ms_ = 0;
  uv_timer_s* timer_ = nullptr;  // the deadline of the oldest call in flight
  std::string sha_;              // the script's SHA1 once SCRIPT LOAD answered
  int64_t retry_at_ms_ = 0;      // no connect before this (back-off)
  int64_t backoff_ms_ = 0;
  // Calls in flight, oldest first (a ring: answers come in order).
  std::vector<Pending> ring_;
  size_t head_ = 0;
  size_t count_ = 0;
};

// The links of one worker, by server: instances share a link while any of them holds it.
class RedisLinks {
 public:
  explicit RedisLinks(int worker_count) : by_worker_(worker_count) {}
  // Worker `worker` only.
  std::shared_ptr<RedisLink> Get(int worker, uv_loop_s* loop, const RedisConfig& config);

 private:
  std::vector<std::unordered_map<std::string, std::weak_ptr<RedisLink>>> by_worker_;
};

}  // namespace turnpike::plugins::limit_count
