// RedisLink: one worker's connection to one Redis server for limit-count's `redis` policy:
// hiredis's async context on the worker's libuv loop, every request's script call pipelined
// on it (many in flight, answers in order), with a deadline per call (redis_timeout), and a
// reconnect with back-off after a failure. AUTH, SELECT and SCRIPT LOAD go first on every
// new connection; the calls use EVALSHA, falling back to EVAL on NOSCRIPT.
//
// With sentinels (redis-sentinel), the server is the master a sentinel names: before the
// first connect, and again after the master's connection failed, the link asks the
// sentinels in turn (`SENTINEL get-master-addr-by-name`, within redis_connect_timeout each);
// calls made meanwhile wait, unsent, under their own deadlines.
//
// A ClusterLink (cluster_link.h) keeps one RedisLink per master and uses the extra calls
// below: a deadline of its own (one deadline covers a call's redirects), ASKING before a
// call (an -ASK redirect), and any command (CLUSTER SLOTS).
//
// Worker thread only (the one whose loop it runs on); destroyed there. Per call: one
// hiredis command formatted into the connection's output buffer and one slot of the ring of
// calls in flight; the timer is re-armed only when a call's deadline is the earliest.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "plugins/limit_count/config.h"
#include "plugins/limit_count/redis_store.h"

struct redisAsyncContext;
struct redisReply;
struct uv_loop_s;
struct uv_timer_s;

namespace turnpike::plugins::limit_count {

class RedisLink final : public RedisStore {
 public:
  // `config` names the server (host, port) or the sentinels; a cluster link passes each
  // master's address in it.
  RedisLink(uv_loop_s* loop, const RedisConfig& config);
  ~RedisLink() override;
  RedisLink(const RedisLink&) = delete;
  RedisLink& operator=(const RedisLink&) = delete;

  // RedisStore. Fails at once (inside this call) while the server is unreachable and the
  // back-off has not passed.
  void IncrementFixed(std::string_view key, uint64_t window_s, uint64_t cost, Waiter* waiter,
                      uint64_t token) override;
  // One call of the sliding script with both counters (they must be on this server).
  void IncrementSliding(const SlidingCall& call, Waiter* waiter, uint64_t token) override;
  void Forget(const Waiter* waiter) override;

  // The same call, answered by `deadline_ms` (the loop's clock, uv_now) instead of
  // redis_timeout from now, and preceded by ASKING on the same connection when `asking`.
  void IncrementFixedBy(std::string_view key, uint64_t window_s, uint64_t cost, Waiter* waiter,
                        uint64_t token, int64_t deadline_ms, bool asking);
  // The sliding script on `call.current` only, with the previous window's count given
  // (`previous_count` >= 0, read by the caller from wherever that counter lives; a cluster),
  // or, with -1, both counters on this server. Deadline and ASKING as IncrementFixedBy.
  void IncrementSlidingBy(const SlidingCall& call, int64_t previous_count, Waiter* waiter,
                          uint64_t token, int64_t deadline_ms, bool asking);

  // Any command (at most 8 arguments), pipelined with the script calls under the same
  // deadline rules; its reply, whatever it is, goes to `waiter`. Not with sentinels (fails
  // at once while the master's address is being asked for).
  void Query(std::initializer_list<std::string_view> args, Waiter* waiter, uint64_t token,
             int64_t deadline_ms, bool asking = false);

  // Calls in flight (tests).
  size_t in_flight() const { return count_; }

 private:
  enum class Kind : uint8_t {
    kInternal,  // a call of the link's own (AUTH, SELECT, SCRIPT LOAD, ASKING)
    kScript,    // the counter script: NOSCRIPT sends it again as EVAL
    kQuery,     // Query(): the reply goes to the waiter as it is
  };
  // The scripts the link loads, by index.
  enum class Script : uint8_t { kFixed, kSliding };
  struct Pending {
    Kind kind = Kind::kScript;
    Script script = Script::kFixed;  // kScript: which one; kInternal: the one a LOAD loads
    bool sent = false;               // false: waiting for the master's address (sentinels)
    Waiter* waiter = nullptr;        // nullptr: forgotten (its waiter went away), or internal
    uint64_t token = 0;
    int64_t deadline_ms = 0;
    // For a NOSCRIPT answer: the call is sent again as EVAL.
    std::string key;
    uint64_t window_s = 0;
    uint64_t cost = 0;
    // The sliding script: the previous window's counter (one server), or its count (>= 0).
    std::string previous;
    int64_t previous_count = -1;
    uint64_t limit = 0;
    uint64_t left_ms = 0;
  };

  enum class Readiness { kReady, kWaiting, kDown };
  Readiness EnsureConnected();
  void ConnectTo(const std::string& host, int port);
  // Sentinels: asks the next one for the master's address.
  void AskSentinel();
  void DropSentinel();
  static void OnSentinelReply(redisAsyncContext* c, void* reply, void* privdata);
  // A script call: sent now, queued until the master is known, or failed at once.
  void Submit(Pending p, Waiter* waiter, uint64_t token, int64_t deadline_ms, bool asking);
  void Send(Pending p, bool eval);
  void SendInternal(std::initializer_list<std::string_view> args, Script loads = Script::kFixed);
  void Push(Pending p);
  Pending Pop();
  // Arms the timer for `due` unless it is armed for an earlier time.
  void ArmTimerFor(int64_t due);
  // Arms the timer for the earliest deadline in flight (a scan: on the timer only).
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
  uv_timer_s* timer_ = nullptr;      // the earliest deadline in flight
  int64_t timer_due_ = INT64_MAX;    // when it fires; INT64_MAX: stopped
  std::array<std::string, 2> shas_;  // each script's SHA1 once SCRIPT LOAD answered
  int64_t retry_at_ms_ = 0;          // no connect before this (back-off)
  int64_t backoff_ms_ = 0;
  // Calls in flight, oldest first (a ring: answers come in order).
  std::vector<Pending> ring_;
  size_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace turnpike::plugins::limit_count
