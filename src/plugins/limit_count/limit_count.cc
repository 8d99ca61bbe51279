#include "plugins/limit_count/limit_count.h"

#include <hiredis/hiredis.h>

#include <charconv>

#include "plugins/common/schema.h"
#include "plugins/limit_count/sliding_window.h"
#include "turnpike/strings.h"

namespace turnpike::plugins::limit_count {
namespace {

constexpr uint64_t kMaxAmount = (uint64_t{1} << 53) - 1;
constexpr std::string_view kFailedBody = "{\"error_msg\":\"failed to limit count\"}\n";
// Before the counter identity in Redis (shared with APISIX's limit-count): the fixed
// window's counter, and the sliding window's ("<prefix><identity>.<window id>.counter").
constexpr std::string_view kRedisPrefix = "plugin-limit-count:v1:";
constexpr std::string_view kSlidingPrefix = "plugin-limit-count:";

// A paused request as a token (the link hands it back): slot and generation; the table is
// the worker's, kept by the worker state.
uint64_t Pack(const PausedRequest& h) {
  return (static_cast<uint64_t>(h.slot()) << 32) | h.generation();
}

// An integer element of a script answer (Redis turns Lua numbers into integers, strings
// stay strings).
bool ReplyInteger(const redisReply* r, int64_t* out) {
  if (r->type == REDIS_REPLY_INTEGER) {
    *out = r->integer;
    return true;
  }
  if (r->type == REDIS_REPLY_STRING) {
    auto [p, ec] = std::from_chars(r->str, r->str + r->len, *out);
    return ec == std::errc() && p == r->str + r->len;
  }
  return false;
}

// Seconds with up to two decimals, trailing zeros dropped ("60", "59.5", "0.07"), from
// hundredths of a second, into `buf`.
std::string_view FormatCentiseconds(uint64_t cs, char (&buf)[24]) {
  char whole[20];
  const std::string_view seconds = FormatDecimal(cs / 100, whole);
  std::memcpy(buf, seconds.data(), seconds.size());
  size_t n = seconds.size();
  const uint64_t frac = cs % 100;
  if (frac != 0) {
    buf[n++] = '.';
    buf[n++] = static_cast<char>('0' + frac / 10);
    if (frac % 10 != 0) buf[n++] = static_cast<char>('0' + frac % 10);
  }
  return std::string_view(buf, n);
}

}  // namespace

struct LimitCountPlugin::Scratch {
  std::string key;
  std::string amount;
  std::string value;
  std::string previous;  // sliding: the previous window's counter
  // redis: the rule being counted and its numbers, while the request waits.
  size_t rule = 0;
  uint64_t count = 0;
  uint64_t window = 0;
  uint64_t left_ms = 0;  // sliding: of the current window
  bool applied = false;
  // sync_interval: the key asked Redis for its quota (sliding: for the window ending then).
  CounterKey sync_key;
  int64_t window_end_ms = 0;
  bool synced = false;

  // Reset between requests in place: the buffers keep their capacity (request_state.h).
  void Clear() {
    key.clear();
    amount.clear();
    value.clear();
    previous.clear();
    rule = 0;
    count = window = 0;
    applied = false;
    synced = false;
  }
};

struct LimitCountPlugin::RedisState final : WorkerState, RedisStore::Waiter {
  ~RedisState() override {
    if (link != nullptr) link->Forget(this);  // late replies go to nobody
  }
  void OnRedisReply(const redisReply* reply, std::string_view error, uint64_t token) override {
    if (table == nullptr) return;
    PausedRequest handle(table, static_cast<uint32_t>(token >> 32),
                         static_cast<uint32_t>(token & 0xffffffffu));
    PluginContext* ctx = handle.context();
    if (ctx == nullptr) return;  // the client went away meanwhile
    plugin->OnRedisReply(*ctx, handle, reply, error);
  }

  const LimitCountPlugin* plugin = nullptr;
  std::shared_ptr<RedisStore> link;
  std::unique_ptr<SyncWorker> sync;       // sync_interval: the keys this worker flushes
  PausedRequest::Table* table = nullptr;  // the worker's pause table, from the first pause
};

LimitCountPlugin::LimitCountPlugin(Config config, std::shared_ptr<CounterTable> table,
                                   std::shared_ptr<RedisLinks> links, Clock& clock,
                                   std::shared_ptr<SyncTable> sync_table)
    : config_(std::move(config)),
      table_(std::move(table)),
      links_(std::move(links)),
      sync_table_(std::move(sync_table)),
      clock_(clock),
      seed_(SeedFingerprint(config_.identity_prefix)),
      remote_addr_(CompileVar("remote_addr").value()) {}

bool LimitCountPlugin::Resolve(const Amount& a, PluginContext& ctx, std::string* buf,
                               uint64_t* out) const {
  if (!a.tpl) {
    *out = a.value;
    return true;
  }
  a.tpl->Render(ctx, buf);
  // tonumber(): decimal digits (a trailing ".0" of a float-valued variable is fine).
  std::string_view s = *buf;
  if (s.size() > 2 && s.substr(s.size() - 2) == ".0") s.remove_suffix(2);
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty() || v == 0 || v > kMaxAmount) {
    return false;
  }
  *out = v;
  return true;
}

void LimitCountPlugin::SingleKey(PluginContext& ctx, std::string* out) const {
  out->clear();
  switch (config_.key_type) {
    case KeyType::kVar:
      if (config_.key_var) {
        if (std::optional<std::string_view> v = ctx.Get(*config_.key_var)) {
          out->assign(*v);
          return;
        }
      }
      break;
    case KeyType::kVarCombination:
      if (config_.key_template.Render(ctx, out) > 0) return;
      break;
    case KeyType::kConstant:
      out->assign(config_.key);
      return;
  }
  // The value of the configured key is empty: the client address instead, as APISIX does.
  out->assign(ctx.Get(remote_addr_).value_or(""));
}

std::unique_ptr<WorkerState> LimitCountPlugin::CreateWorkerState(
    const WorkerEnvironment& env) const {
  auto state = std::make_unique<RedisState>();
  state->plugin = this;
  state->link = links_->Get(env.worker_index, env.loop, config_.redis);
  if (sync_table_ != nullptr) {
    state->sync = std::make_unique<SyncWorker>(
        env.loop, sync_table_, std::make_unique<LinkAdapter<RedisStore>>(state->link),
        config_.sync_interval_ms, clock_, config_.window_type == WindowType::kSliding);
  }
  return state;
}

PhaseResult LimitCountPlugin::Access(PluginContext& ctx) const {
  Scratch& scratch = ctx.RequestState<Scratch>(this);
  if (config_.policy != Policy::kLocal) {
    scratch.applied = false;
    return RedisNext(ctx, scratch, 0, nullptr);
  }
  if (!config_.rules_mode) {
    const Rule& rule = config_.rules.front();
    uint64_t count = 0;
    uint64_t window = 0;
    if (!Resolve(rule.count, ctx, &scratch.amount, &count) ||
        !Resolve(rule.time_window, ctx, &scratch.amount, &window)) {
      if (config_.allow_degradation) return PhaseResult::kContinue;
      ctx.Respond(500, "");  // a template that gives no valid number: not a bypass
      return PhaseResult::kRespond;
    }
    SingleKey(ctx, &scratch.key);
    if (!Take(ctx, rule, scratch.key, count, window)) return PhaseResult::kRespond;
    return PhaseResult::kContinue;
  }
  bool applied = false;
  for (const Rule& rule : config_.rules) {
    uint64_t count = 0;
    uint64_t window = 0;
    if (!Resolve(rule.count, ctx, &scratch.amount, &count) ||
        !Resolve(rule.time_window, ctx, &scratch.amount, &window)) {
      continue;  // a rule whose numbers do not resolve is skipped
    }
    if (rule.key.Render(ctx, &scratch.key) == 0) continue;  // no variable resolved
    scratch.key.append(rule.key_suffix);
    applied = true;
    if (!Take(ctx, rule, scratch.key, count, window)) return PhaseResult::kRespond;
  }
  if (!applied && !config_.allow_degradation) {
    ctx.Respond(500, "");  // "failed to get rate limit rules"
    return PhaseResult::kRespond;
  }
  return PhaseResult::kContinue;
}

PhaseResult LimitCountPlugin::RedisNext(PluginContext& ctx, Scratch& scratch, size_t from,
                                        const PausedRequest* paused) const {
  // What to do when no rule is left to count: go on (from a pause: resume), or answer.
  auto finish = [&](bool ok, int status) {
    if (!ok) ctx.Respond(status, "");
    if (paused != nullptr) {
      paused->Resume();
      return PhaseResult::kPause;  // ignored: the caller is a reply, not the hook
    }
    return ok ? PhaseResult::kContinue : PhaseResult::kRespond;
  };
  for (size_t i = from; i < config_.rules.size(); ++i) {
    const Rule& rule = config_.rules[i];
    uint64_t count = 0;
    uint64_t window = 0;
    bool resolved = Resolve(rule.count, ctx, &scratch.amount, &count) &&
                    Resolve(rule.time_window, ctx, &scratch.amount, &window);
    if (config_.rules_mode) {
      if (!resolved) continue;
      if (rule.key.Render(ctx, &scratch.value) == 0) continue;
      scratch.value.append(rule.key_suffix);
    } else {
      if (!resolved) return finish(config_.allow_degradation, 500);
      SingleKey(ctx, &scratch.value);
    }
    scratch.applied = true;
    scratch.rule = i;
    scratch.count = count;
    scratch.window = window;
    scratch.synced = false;
    // A templated time_window at or below sync_interval asks Redis on every request, as
    // APISIX falls back to the direct call (a number is checked at load).
    const bool delayed =
        sync_table_ != nullptr && static_cast<int64_t>(window) * 1000 > config_.sync_interval_ms;
    if (config_.window_type == WindowType::kSliding) {
      // The counter's name, then its windows' (amount is free: the numbers are resolved).
      scratch.amount.assign(kSlidingPrefix);
      scratch.amount.append(config_.identity_prefix);
      scratch.amount.append(scratch.value);
      SlidingKeys k =
          MakeSlidingKeys(scratch.amount, window, clock_.WallMs(), &scratch.key, &scratch.previous);
      scratch.left_ms = k.left_ms;
      if (delayed) {
        // Delayed sync: decided here while the key's view is of this window.
        CounterKey id = Fingerprint(seed_, scratch.value);
        const auto window_ms = static_cast<int64_t>(window) * 1000;
        const int64_t window_end_ms = (k.window_id + 1) * window_ms;
        SyncTable::Decision d = sync_table_->DecideSliding(id, count, 1, window_ms, window_end_ms,
                                                           k.left_ms, clock_.MonotonicMs());
        if (d.kind != SyncTable::Decision::kAskRedis) {
          const bool admitted = d.kind == SyncTable::Decision::kAdmit;
          if (d.claimed) {
            ctx.worker_state<RedisState>(*this).sync->Track(id, scratch.amount, window);
          }
          SlidingVerdict v = JudgeSliding(admitted, d.count, d.previous, count, window, k.left_ms);
          SetHeaders(ctx, rule, count, v.remaining, v.reset_cs);
          if (!admitted) {
            Reject(ctx);
            if (paused == nullptr) return PhaseResult::kRespond;
            paused->Resume();
            return PhaseResult::kPause;
          }
          continue;
        }
        scratch.synced = true;
        scratch.sync_key = id;
        scratch.window_end_ms = window_end_ms;
      }
      PausedRequest handle = paused != nullptr ? *paused : ctx.Pause();
      if (!handle.alive()) return finish(config_.allow_degradation, 500);
      RedisState& state = ctx.worker_state<RedisState>(*this);
      state.table = handle.table();
      RedisStore::SlidingCall call{scratch.key, scratch.previous, window, k.left_ms, count, 1};
      state.link->IncrementSliding(call, &state, Pack(handle));
      return PhaseResult::kPause;
    }
    scratch.key.assign(kRedisPrefix);
    scratch.key.append(config_.identity_prefix);
    scratch.key.append(scratch.value);
    if (delayed) {
      // Delayed sync: decided here unless the key's quota is unknown or its window passed.
      CounterKey id = Fingerprint(seed_, scratch.value);
      SyncTable::Decision d = sync_table_->Decide(id, count, 1, static_cast<int64_t>(window) * 1000,
                                                  clock_.MonotonicMs());
      if (d.kind != SyncTable::Decision::kAskRedis) {
        uint64_t reset_cs = static_cast<uint64_t>(std::max<int64_t>(0, d.reset_ms)) / 10;
        SetHeaders(ctx, rule, count, d.remaining, reset_cs);
        if (d.kind == SyncTable::Decision::kReject) {
          Reject(ctx);
          if (paused == nullptr) return PhaseResult::kRespond;
          paused->Resume();
          return PhaseResult::kPause;
        }
        if (d.claimed) ctx.worker_state<RedisState>(*this).sync->Track(id, scratch.key, window);
        continue;
      }
      scratch.synced = true;
      scratch.sync_key = id;
    }
    PausedRequest handle = paused != nullptr ? *paused : ctx.Pause();
    if (!handle.alive()) return finish(config_.allow_degradation, 500);  // cannot wait here
    RedisState& state = ctx.worker_state<RedisState>(*this);
    state.table = handle.table();
    // The reply may come inside this call (Redis unreachable): it then resumes the request
    // before the hook returns, which the chain allows.
    state.link->IncrementFixed(scratch.key, window, 1, &state, Pack(handle));
    return PhaseResult::kPause;
  }
  if (config_.rules_mode && !scratch.applied) return finish(config_.allow_degradation, 500);
  return finish(true, 0);
}

void LimitCountPlugin::OnRedisReply(PluginContext& ctx, const PausedRequest& handle,
                                    const redisReply* reply, std::string_view /*error*/) const {
  Scratch& scratch = ctx.RequestState<Scratch>(this);
  if (config_.window_type == WindowType::kSliding) {
    OnSlidingReply(ctx, handle, reply, scratch);
    return;
  }
  int64_t used = 0;
  int64_t ttl_ms = 0;
  bool ok = reply != nullptr && reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
            ReplyInteger(reply->element[0], &used) && ReplyInteger(reply->element[1], &ttl_ms);
  if (scratch.synced && ok) {
    // Delayed sync: the answer is the key's quota now.
    sync_table_->Settle(scratch.sync_key, 0, true, used, ttl_ms, clock_.MonotonicMs());
  }
  if (!ok) {
    // Redis down, slow or answering nonsense: "failed to limit count", or through.
    if (!config_.allow_degradation) ctx.Respond(500, kFailedBody);
    handle.Resume();
    return;
  }
  const Rule& rule = config_.rules[scratch.rule];
  uint64_t count = scratch.count;
  bool allowed = used >= 0 && static_cast<uint64_t>(used) <= count;
  uint64_t remaining = allowed ? count - static_cast<uint64_t>(used) : 0;
  SetHeaders(ctx, rule, count, remaining, static_cast<uint64_t>(std::max<int64_t>(0, ttl_ms)) / 10);
  if (!allowed) {
    Reject(ctx);
    handle.Resume();
    return;
  }
  RedisNext(ctx, scratch, scratch.rule + 1, &handle);
}

void LimitCountPlugin::OnSlidingReply(PluginContext& ctx, const PausedRequest& handle,
                                      const redisReply* reply, Scratch& scratch) const {
  int64_t admitted = 0;
  int64_t count = 0;
  int64_t previous = 0;
  bool ok = reply != nullptr && reply->type == REDIS_REPLY_ARRAY && reply->elements == 3 &&
            ReplyInteger(reply->element[0], &admitted) && ReplyInteger(reply->element[1], &count) &&
            ReplyInteger(reply->element[2], &previous) && count >= 0 && previous >= 0;
  if (!ok) {
    if (!config_.allow_degradation) ctx.Respond(500, kFailedBody);
    handle.Resume();
    return;
  }
  if (scratch.synced) {
    // Delayed sync: the window's counts are the key's view now.
    sync_table_->SettleSliding(scratch.sync_key, 0, true, scratch.window_end_ms, count, previous,
                               clock_.WallMs(), clock_.MonotonicMs());
  }
  const Rule& rule = config_.rules[scratch.rule];
  SlidingVerdict v =
      JudgeSliding(admitted == 1, static_cast<uint64_t>(count), static_cast<uint64_t>(previous),
                   scratch.count, scratch.window, scratch.left_ms);
  SetHeaders(ctx, rule, scratch.count, v.remaining, v.reset_cs);
  if (!v.allowed) {
    Reject(ctx);
    handle.Resume();
    return;
  }
  RedisNext(ctx, scratch, scratch.rule + 1, &handle);
}

void LimitCountPlugin::SetHeaders(PluginContext& ctx, const Rule& rule, uint64_t count,
                                  uint64_t remaining, uint64_t reset_cs) const {
  if (!config_.show_limit_quota_header) return;
  char digits[20];
  ctx.SetResponseHeader(rule.limit_header,
                        rule.count.tpl ? FormatDecimal(count, digits) : rule.count.text);
  ctx.SetResponseHeader(rule.remaining_header, FormatDecimal(remaining, digits));
  char seconds[24];
  ctx.SetResponseHeader(rule.reset_header, FormatCentiseconds(reset_cs, seconds));
}

bool LimitCountPlugin::Take(PluginContext& ctx, const Rule& rule, std::string_view key,
                            uint64_t count, uint64_t window_s) const {
  CounterKey id = Fingerprint(seed_, key);
  int64_t window_ms = static_cast<int64_t>(window_s) * 1000;
  bool allowed = false;
  uint64_t remaining = 0;
  uint64_t reset_cs = 0;  // hundredths of a second
  if (config_.window_type == WindowType::kFixed) {
    int64_t now = clock_.MonotonicMs();
    CounterTable::Fixed r = table_->TakeFixed(id, count, window_ms, now);
    allowed = r.allowed;
    remaining = r.used < count ? count - r.used : 0;
    // Exactly the window on the request that opened it; then the time left, floored.
    reset_cs = r.opened ? window_s * 100
                        : static_cast<uint64_t>(std::max<int64_t>(0, r.window_end_ms - now) / 10);
  } else {
    // Sliding windows are aligned to the clock, so they follow the wall clock.
    CounterTable::Sliding r = table_->TakeSliding(id, count, window_ms, clock_.WallMs());
    allowed = r.allowed;
    remaining = r.remaining;
    reset_cs = static_cast<uint64_t>((r.reset_ms + 9) / 10);  // rounded up, as APISIX
  }
  SetHeaders(ctx, rule, count, allowed ? remaining : 0, reset_cs);
  if (allowed) return true;
  Reject(ctx);
  return false;
}

void LimitCountPlugin::Reject(PluginContext& ctx) const {
  ctx.Respond(config_.rejected_code, config_.rejected_body);
}

Status LimitCountFactory::Admit(const Plugin& instance, uint64_t build) const {
  const Config& c = static_cast<const LimitCountPlugin&>(instance).config();
  if (!c.group) return Status::Ok();
  std::lock_guard<std::mutex> lock(mu_);
  GroupSeen& seen = groups_[*c.group];
  if (seen.build != build) {
    seen = {build, c.group_conf};
    return Status::Ok();
  }
  if (seen.conf != c.group_conf) return Status::Error("group conf mismatched");
  return Status::Ok();
}

StatusOr<PluginConstSharedPtr> LimitCountFactory::MakePlugin(Config config,
                                                             FactoryContext& ctx) const {
  std::shared_ptr<CounterTable> table;
  std::shared_ptr<RedisLinks> links;
  if (config.policy != Policy::kLocal) {
    std::lock_guard<std::mutex> lock(mu_);
    if (links_ == nullptr) links_ = std::make_shared<RedisLinks>(ctx.worker_count());
    links = links_;
  }
  std::shared_ptr<SyncTable> sync_table;
  if (config.sync_interval_ms > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    if (sync_table_ == nullptr) {
      size_t counters = kDefaultSyncCounters;
      const nlohmann::json& attr = ctx.attr();
      if (attr.is_object()) {
        if (auto it = attr.find("sync_counters"); it != attr.end()) {
          if (std::string e = schema::CheckInteger(*it, 1024, int64_t{1} << 32); !e.empty()) {
            return Status::Error("plugin_attr.limit-count: " +
                                 schema::PropertyText("sync_counters", e));
          }
          counters = static_cast<size_t>(it->get<double>());
        }
      }
      sync_table_ = std::make_shared<SyncTable>(counters);
    }
    sync_table = sync_table_;
  }
  if (config.policy == Policy::kLocal) {
    std::lock_guard<std::mutex> lock(mu_);
    if (table_ == nullptr) {
      size_t counters = kDefaultCounters;
      const nlohmann::json& attr = ctx.attr();
      if (attr.is_object()) {
        if (auto it = attr.find("local_counters"); it != attr.end()) {
          if (std::string e = schema::CheckInteger(*it, 1024, int64_t{1} << 32); !e.empty()) {
            return Status::Error("plugin_attr.limit-count: " +
                                 schema::PropertyText("local_counters", e));
          }
          counters = static_cast<size_t>(it->get<double>());
        }
      }
      table_ = std::make_shared<CounterTable>(counters);
    }
    table = table_;
  }
  return PluginConstSharedPtr(std::make_shared<const LimitCountPlugin>(
      std::move(config), std::move(table), std::move(links), ctx.clock(), std::move(sync_table)));
}

}  // namespace turnpike::plugins::limit_count
