// ClusterLink: one worker's view of a Redis Cluster for limit-count's `redis-cluster` policy.
//
// It learns the slot map with CLUSTER SLOTS from any node it knows (the configured seeds,
// then the masters it learnt), keeps one RedisLink (redis_link.h: pipelining, deadlines,
// AUTH and script loading, reconnect with back-off) per master it routes to, made on first
// use, and sends each script call to the master of its key's hash slot (cluster_slot.h, so
// "{tags}" are respected). Same key and script as the `redis` policy, so APISIX and Turnpike
// on one cluster share their counts.
//
// Redirects: `-MOVED <slot> <host:port>` updates that slot at once, starts a refresh of the
// whole map in the background and retries at the named master; `-ASK <slot> <host:port>`
// (a slot being migrated, the key already gone) retries at the named node behind ASKING,
// leaving the map alone. A call follows at most kMaxRedirects redirects and keeps the
// deadline it started with (redis_timeout covers its redirects); past either, its waiter gets
// the failure (500 "failed to limit count", or through with allow_degradation). A failed
// connection fails the calls in flight on it (no retry: they may have counted) and starts a
// refresh, so a promoted replica takes over; the map is also refreshed when a call comes
// more than kRefreshEveryMs after the last refresh. One refresh runs at a time; it asks the
// known nodes in turn until one answers.
//
// Cost of a call: CRC16 of the key, one slot-table lookup, one RedisLink call on the
// master's connection (pipelined with the worker's other calls to that master), and a slot
// of the call table, reused: nothing is allocated once warm, here or in the RedisLink
// (which costs what it costs the `redis` policy). A refresh of the map reuses the map
// it replaced.
//
// During a MOVED storm (a resharding) every call in flight to a moved slot comes back once
// with MOVED and is re-sent to the new owner, and calls made after the first MOVED of a slot
// go straight there; a refresh runs in the background at most once per kMinRefreshGapMs.
// Nothing waits for a refresh: a slot the map does not know yet goes to a known node, whose
// MOVED answers where it lives. A call whose redirects used up most of its deadline may time
// out on the new owner's connection, which then fails the calls in flight there too (a late
// answer is never matched: the `redis` policy's rule).
//
// Worker thread only (the one whose loop it runs on); destroyed there. Nodes (and their
// links) are kept for the link's life: a cluster has few distinct addresses.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "plugins/limit_count/config.h"
#include "plugins/limit_count/redis_link.h"
#include "plugins/limit_count/redis_store.h"

namespace turnpike::plugins::limit_count {

class ClusterLink final : public RedisStore, private RedisWaiter {
 public:
  static constexpr int kMaxRedirects = 5;
  static constexpr int64_t kRefreshEveryMs = 10'000;
  static constexpr int64_t kMinRefreshGapMs = 100;

  // `config.cluster_nodes` are the seeds (at least one).
  ClusterLink(uv_loop_s* loop, const RedisConfig& config);
  ~ClusterLink() override;
  ClusterLink(const ClusterLink&) = delete;
  ClusterLink& operator=(const ClusterLink&) = delete;

  // RedisStore.
  void IncrementFixed(std::string_view key, uint64_t window_s, uint64_t cost, Waiter* waiter,
                      uint64_t token) override;
  // Two commands one after the other, each to the master of its key's slot (the two
  // counters are on different slots, so no one script may touch both): GET of the previous
  // window's counter, then the script on the current one with that count. Two round trips,
  // under one deadline (redis_timeout); redirects are followed for each. The race this
  // leaves: an increment of the previous window that lands between the GET and the script
  // (a gateway whose clock is behind, a call sent just before the boundary) is not seen by
  // this decision; APISIX's own limiter reads the previous window the same way on every
  // policy.
  void IncrementSliding(const SlidingCall& call, Waiter* waiter, uint64_t token) override;
  void Forget(const Waiter* waiter) override;

  // Tests: redirects followed, slot maps learnt, connections made, calls in flight.
  uint64_t moved() const { return moved_; }
  uint64_t asked() const { return asked_; }
  uint64_t refreshes() const { return refreshes_; }
  size_t connections() const;
  size_t in_flight() const { return calls_.size() - free_.size(); }

 private:
  static constexpr uint16_t kNoNode = UINT16_MAX;
  static constexpr uint64_t kTopologyToken = uint64_t{1} << 63;  // | the node asked

  struct Node {
    std::string host;
    int port = 0;
    std::unique_ptr<RedisLink> link;  // made on first use
  };
  enum class Step : uint8_t {
    kFixed,         // the fixed-window script on `key`
    kReadPrevious,  // sliding: GET `previous`
    kSliding,       // sliding: the script on `key`, with `previous_count`
  };
  struct Call {
    Waiter* waiter = nullptr;  // nullptr: forgotten (its waiter went away)
    uint64_t token = 0;
    Step step = Step::kFixed;
    std::string key;       // keeps its capacity when the slot is reused
    std::string previous;  // sliding: the previous window's counter
    uint64_t window_s = 0;
    uint64_t cost = 0;
    uint64_t limit = 0;
    uint64_t left_ms = 0;
    int64_t previous_count = 0;
    int64_t deadline_ms = 0;
    int redirects = 0;
    uint16_t node = 0;  // where it was sent last
  };

  // From the node links: a script reply (token: the call's index) or a CLUSTER SLOTS reply.
  void OnRedisReply(const redisReply* reply, std::string_view error, uint64_t token) override;
  // A call slot for `waiter`, its deadline started (and the map refreshed when it is old).
  uint32_t NewCall(Waiter* waiter, uint64_t token);
  // The key the call's current command is routed by.
  static std::string_view KeyOf(const Call& c);
  // The previous window's count came (sliding): the script goes to the current key's master.
  void OnPrevious(uint32_t id, const redisReply* reply);
  // Sends call `id`'s current command to `node` (behind ASKING when `asking`).
  void Send(uint32_t id, uint16_t node, bool asking);
  // Call `id` is done: its slot is freed, then its waiter is answered.
  void Finish(uint32_t id, const redisReply* reply, std::string_view error);
  // An -ASK or -MOVED answer to call `id` from `from`: true when it was one (and is handled).
  bool Redirect(uint32_t id, uint16_t from, const redisReply* reply);
  // The node at `host:port`, added when new; kNoNode when the table is full.
  uint16_t NodeAt(std::string_view host, int port);
  RedisLink& LinkOf(uint16_t node);
  // Where a slot's calls go: its master, else a node known to answer (it redirects).
  uint16_t Route(uint16_t slot);
  // Starts a refresh of the slot map unless one runs or one ran less than `gap_ms` ago.
  void Refresh(int64_t gap_ms);
  void AskNextForSlots();
  void OnSlots(const redisReply* reply, uint16_t asked);
  int64_t Now() const;

  uv_loop_s* loop_;
  RedisConfig config_;              // per node, with the node's host and port
  std::vector<Node> nodes_;         // the seeds, then the nodes learnt; never shrinks
  std::vector<uint16_t> map_;       // slot -> node (kNoNode: not known yet)
  std::vector<uint16_t> next_map_;  // the map a refresh builds, then swaps in
  uint16_t fallback_ = 0;           // where an unknown slot goes: the last node that answered
  std::deque<Call> calls_;          // by id; references stay valid as it grows
  std::vector<uint32_t> free_;
  bool refreshing_ = false;
  size_t refresh_next_ = 0;                  // the node to ask next
  size_t refresh_asked_ = 0;                 // nodes asked in this round
  int64_t refreshed_at_ms_ = INT64_MIN / 2;  // the last refresh started
  bool closing_ = false;
  uint64_t moved_ = 0;
  uint64_t asked_ = 0;
  uint64_t refreshes_ = 0;
};

}  // namespace turnpike::plugins::limit_count
