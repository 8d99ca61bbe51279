// RedisLink: one worker's connection to one Redis server for limit-count's `redis` policy:
// every request's script call pipelined on it (many in flight, answers in order), with a
// deadline per call (redis_timeout), and a reconnect with back-off after a failure. AUTH,
// SELECT and SCRIPT LOAD go first on every new connection; the calls use EVALSHA, falling
// back to EVAL on NOSCRIPT.
//
// The connection is hiredis's non-blocking redisContext (its connect and its reply parser)
// driven by the link on the worker's libuv loop (a uv_poll on its socket), not hiredis's
// async layer: hiredis 0.14 (Debian 12's) mallocs a callback node per command and a new
// output buffer per write there, and has no allocator hook (hiredisSetAllocators came in
// 1.0). The link needs neither: its ring of calls already matches answers to calls in
// order, and it formats each command itself (RESP) into its own output buffer, written when
// the socket is writable, so one write carries every command of a loop turn, as before.
// The parser builds replies with the link's object functions (redisReplyObjectFunctions)
// in the link's reply storage, reused once the reply was handled.
//
// With sentinels (redis-sentinel), the server is the master a sentinel names: before the
// first connect, and again after the master's connection failed, the link asks the
// sentinels in turn (`SENTINEL get-master-addr-by-name`, within redis_connect_timeout each,
// on a hiredis async connection of its own: not per request);
// calls made meanwhile wait, unsent, under their own deadlines.
//
// A ClusterLink (cluster_link.h) keeps one RedisLink per master and uses the extra calls
// below: a deadline of its own (one deadline covers a call's redirects), ASKING before a
// call (an -ASK redirect), and any command (CLUSTER SLOTS).
//
// Worker thread only (the one whose loop it runs on); destroyed there (the connection's
// socket and poll handle are released on a later turn of the loop, by uv_close).
//
// Cost per call, once warm: the command appended to the output buffer, one slot of the ring
// of calls in flight (its key strings keep their capacity), the reply built in the reply
// storage; no heap allocation (tests/proxy/alloc_test.cc counts operator new and malloc).
// The timer is re-armed only when a call's deadline is the earliest. What grows (the ring,
// the output buffer, the reply storage, hiredis's read buffer) grows to the largest burst
// of calls in flight and stays: bounded by the load, per link.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "plugins/limit_count/config.h"
#include "plugins/limit_count/redis_store.h"

struct redisAsyncContext;
struct redisContext;
struct redisReply;
struct uv_loop_s;
struct uv_poll_s;
struct uv_timer_s;

namespace turnpike::plugins::limit_count {

// Where a RedisLink's parser puts a reply (redisReply nodes, element arrays, strings):
// bumped out of blocks kept for the storage's life, all reused after Clear(). Memory: the
// largest reply seen, rounded up to 4 KiB blocks. One thread.
class RedisReplyStorage {
 public:
  // `size` zeroed bytes, aligned for redisReply, valid until Clear().
  void* Alloc(size_t size);
  void Clear() {
    block_ = 0;
    used_ = 0;
  }

 private:
  static constexpr size_t kBlockSize = 4096;
  struct Block {
    std::unique_ptr<unsigned char[]> bytes;
    size_t size = 0;
  };
  std::vector<Block> blocks_;
  size_t block_ = 0;  // the block being filled
  size_t used_ = 0;   // of it
};

class RedisLink final : public RedisStore {
 public:
  // `config` names the server (host, port) or the sentinels; a cluster link passes each
  // master's address in it.
  RedisLink(uv_loop_s* loop, const RedisConfig& config);
  ~RedisLink() override;
  RedisLink(const RedisLink&) = delete;
  RedisLink& operator=(const RedisLink&) = delete;

  // RedisStore. Fails at once (inside this call) while the server is unreachable and the
  // back-off has not passed. The reply a waiter gets lives in the link's reply storage:
  // valid during OnRedisReply only.
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

  // Any command, pipelined with the script calls under the same deadline rules; its reply,
  // whatever it is, goes to `waiter` (valid during that call only). Not with sentinels
  // (fails at once while the master's address is being asked for).
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

  // What a script call sends (views, copied into its ring slot).
  struct ScriptCall {
    Script script = Script::kFixed;
    std::string_view key;
    std::string_view previous;    // sliding, one server: the previous window's counter
    int64_t previous_count = -1;  // sliding, a cluster: its count (>= 0)
    uint64_t window_s = 0;
    uint64_t cost = 0;
    uint64_t limit = 0;
    uint64_t left_ms = 0;
  };
  static ScriptCall ScriptOf(const Pending& p);

  enum class Readiness { kReady, kWaiting, kDown };
  Readiness EnsureConnected();
  void ConnectTo(const std::string& host, int port);
  // Sentinels: asks the next one for the master's address.
  void AskSentinel();
  void DropSentinel();
  static void OnSentinelReply(redisAsyncContext* c, void* reply, void* privdata);
  // A script call: sent now, queued until the master is known, or failed at once.
  void Submit(const ScriptCall& call, Waiter* waiter, uint64_t token, int64_t deadline_ms,
              bool asking);
  // Sends a script call (EVAL with the script's body when `eval`, else EVALSHA).
  void SendScript(const ScriptCall& call, Waiter* waiter, uint64_t token, int64_t deadline_ms,
                  bool eval);
  void SendInternal(std::initializer_list<std::string_view> args, Script loads = Script::kFixed);
  // The ring slot the next call takes (the ring grows when full), then Commit() counts it in.
  Pending& Reserve();
  // Reserve() filled with a script call (`sent`: its command goes into this turn's output).
  Pending& ReserveScript(const ScriptCall& call, Waiter* waiter, uint64_t token,
                         int64_t deadline_ms, bool sent);
  void Commit(int64_t due);
  // The oldest call leaves the ring (its slot keeps its strings' capacity).
  void PopFront();
  // Arms the timer for `due` unless it is armed for an earlier time.
  void ArmTimerFor(int64_t due);
  // Arms the timer for the earliest deadline in flight (a scan: on the timer only).
  void ArmTimer();
  // The connection failed (error, timeout, lost): every call in flight fails with `error`,
  // and the next connect waits for the back-off.
  void Reset(std::string_view error);

  // The connection: commands in RESP appended to out_, written when the socket is writable.
  void Append(std::initializer_list<std::string_view> args);
  void AppendScript(const Pending& p, bool eval);
  void WatchWrites();
  void CloseConnection();
  static void OnPoll(uv_poll_s* poll, int status, int events);
  void OnWritable();
  void OnReadable();
  // The reply to the oldest call.
  void Dispatch(const redisReply* reply);
  static void OnTimer(uv_timer_s* t);

  uv_loop_s* loop_;
  RedisConfig config_;
  redisContext* ctx_ = nullptr;  // the server's connection (connecting, or connected)
  uv_poll_s* poll_ = nullptr;    // on its socket
  bool connected_ = false;       // the non-blocking connect completed
  bool writing_ = false;         // the poll watches writability
  std::string out_;              // commands not written yet, from out_sent_ on
  size_t out_sent_ = 0;
  RedisReplyStorage replies_;
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
