// limit-count: runtime part. access: resolves each rule's count, window and key, takes one
// from the counter (local: the process-wide CounterTable), sets the X-RateLimit-* headers
// and turns away what is over the limit with rejected_code. A store that fails answers
// 500 {"error_msg":"failed to limit count"}, or lets the request through with
// allow_degradation.
//
// Per request, local: the key is rendered into request-state scratch (no allocation once
// warm), hashed once, and counted under one shard lock of the table. redis, redis-sentinel,
// redis-cluster: the request pauses while the worker's RedisStore (a RedisLink, or a
// ClusterLink routing by hash slot) runs the script, pipelined with the other requests',
// and resumes on the reply (with sync_interval only when the key's quota is unknown or its
// window has passed, for either window type; delayed_sync.h decides the others locally). A
// sliding window costs one script call on one server, a GET and a script call on a cluster
// (redis_store.h), and renders two counter names (the window's and the one before) into
// request-state scratch. Rules are counted one after the other, stopping at the first
// rejection, as APISIX does. A request whose client went away meanwhile is not resumed (its
// pause handle is stale) and the reply is dropped.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>

#include "plugins/limit_count/config.h"
#include "plugins/limit_count/counter_table.h"
#include "plugins/limit_count/delayed_sync.h"
#include "plugins/limit_count/redis_store.h"
#include "turnpike/clock.h"
#include "turnpike/plugin.h"
#include "turnpike/typed_factory.h"

namespace turnpike::plugins::limit_count {

class LimitCountPlugin final : public Plugin {
 public:
  LimitCountPlugin(Config config, std::shared_ptr<CounterTable> table,
                   std::shared_ptr<RedisLinks> links, Clock& clock,
                   std::shared_ptr<SyncTable> sync_table = nullptr);
  uint32_t phases() const override { return kPhaseAccess; }
  PhaseResult Access(PluginContext& ctx) const override;
  bool has_worker_state() const override { return config_.policy != Policy::kLocal; }
  std::unique_ptr<WorkerState> CreateWorkerState(const WorkerEnvironment& env) const override;

  const Config& config() const { return config_; }

  // The worker's Redis link for this instance, and the waiter of its calls.
  struct RedisState;
  // A reply (or failure) for the paused request `handle`, whose context is `ctx`.
  void OnRedisReply(PluginContext& ctx, const PausedRequest& handle, const redisReply* reply,
                    std::string_view error) const;

 private:
  struct Scratch;  // per-request buffers (request state)
  // redis: counts rule `from` or the next one that applies, pausing for it; answers or
  // resumes when no rule is left.
  PhaseResult RedisNext(PluginContext& ctx, Scratch& scratch, size_t from,
                        const PausedRequest* paused) const;
  // OnRedisReply for window_type sliding: [admitted, count, previous count].
  void OnSlidingReply(PluginContext& ctx, const PausedRequest& handle, const redisReply* reply,
                      Scratch& scratch) const;
  // The quota headers of `rule`.
  void SetHeaders(PluginContext& ctx, const Rule& rule, uint64_t count, uint64_t remaining,
                  uint64_t reset_cs) const;
  // Resolves an Amount; false when a template gives no positive integer <= 2^53-1.
  bool Resolve(const Amount& a, PluginContext& ctx, std::string* buf, uint64_t* out) const;
  // The key of the single rule (key_type / key), with the client address as the fallback.
  void SingleKey(PluginContext& ctx, std::string* out) const;
  // Counts one request of `rule` against `key`; false when it is rejected (the response is
  // set up then).
  bool Take(PluginContext& ctx, const Rule& rule, std::string_view key, uint64_t count,
            uint64_t window_s) const;
  void Reject(PluginContext& ctx) const;

  Config config_;
  std::shared_ptr<CounterTable> table_;
  std::shared_ptr<RedisLinks> links_;
  std::shared_ptr<SyncTable> sync_table_;  // sync_interval: the process-wide delayed-sync state
  Clock& clock_;
  FingerprintSeed seed_;  // of config_.identity_prefix
  VarRef remote_addr_;
};

class LimitCountFactory final
    : public TypedPluginFactory<LimitCountFactory, Config, LimitCountPlugin> {
 public:
  static constexpr std::string_view kName = "limit-count";
  static constexpr int kPriority = 1002;
  static constexpr auto kParseConfig = &ParseConfig;
  // Slots of the local counter table unless plugin_attr.limit-count.local_counters says
  // otherwise: 262,144 keys in 12 MiB (the table takes memory as keys arrive).
  static constexpr size_t kDefaultCounters = 262144;
  // Slots of the delayed-sync table (sync_interval) unless plugin_attr.limit-count.
  // sync_counters says otherwise: 262,144 keys in 16 MiB, made with the first instance that
  // has a sync_interval.
  static constexpr size_t kDefaultSyncCounters = 262144;

  StatusOr<PluginConstSharedPtr> MakePlugin(Config config, FactoryContext& ctx) const;
  // Every instance with a `group` in one build has the same conf, else "group conf
  // mismatched" (APISIX): the first one seen in the build sets it. Kept instances are
  // checked too, so an edit of one member of a group is caught on reload.
  Status Admit(const Plugin& instance, uint64_t build) const override;

 private:
  struct GroupSeen {
    uint64_t build = 0;
    std::string conf;
  };
  mutable std::unordered_map<std::string, GroupSeen> groups_;  // under mu_
  // The process-wide table, made with the first local instance: every instance of every
  // snapshot shares it, so counters outlive reloads.
  mutable std::mutex mu_;
  mutable std::shared_ptr<CounterTable> table_;
  mutable std::shared_ptr<RedisLinks> links_;  // every worker's links, by server
  mutable std::shared_ptr<SyncTable> sync_table_;
};

}  // namespace turnpike::plugins::limit_count
