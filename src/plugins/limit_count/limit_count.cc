#include "plugins/limit_count/limit_count.h"

#include <charconv>

#include "plugins/common/schema.h"

namespace turnpike::plugins::limit_count {
namespace {

constexpr uint64_t kMaxAmount = (uint64_t{1} << 53) - 1;
constexpr std::string_view kFailedBody = "{\"error_msg\":\"failed to limit count\"}\n";

// Seconds with up to two decimals, trailing zeros dropped ("60", "59.5", "0.07"), from
// hundredths of a second.
void AppendCentiseconds(uint64_t cs, std::string* out) {
  char buf[32];
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), cs / 100);
  out->append(buf, p);
  uint64_t frac = cs % 100;
  if (frac == 0) return;
  out->push_back('.');
  out->push_back(static_cast<char>('0' + frac / 10));
  if (frac % 10 != 0) out->push_back(static_cast<char>('0' + frac % 10));
}

void AppendDecimal(uint64_t v, std::string* out) {
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, p);
}

}  // namespace

struct LimitCountPlugin::Scratch {
  std::string key;
  std::string amount;
  std::string value;
};

LimitCountPlugin::LimitCountPlugin(Config config, std::shared_ptr<CounterTable> table, Clock& clock)
    : config_(std::move(config)), table_(std::move(table)), clock_(clock) {
  remote_addr_.kind = VarRef::Kind::kBuiltin;
  remote_addr_.builtin = BuiltinVar::kRemoteAddr;
  remote_addr_.source = "remote_addr";
}

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

PhaseResult LimitCountPlugin::Access(PluginContext& ctx) const {
  Scratch& scratch = ctx.RequestState<Scratch>(this);
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
    if (!Take(ctx, rule, scratch.key, count, window, scratch)) return PhaseResult::kRespond;
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
    if (!Take(ctx, rule, scratch.key, count, window, scratch)) return PhaseResult::kRespond;
  }
  if (!applied && !config_.allow_degradation) {
    ctx.Respond(500, "");  // "failed to get rate limit rules"
    return PhaseResult::kRespond;
  }
  return PhaseResult::kContinue;
}

bool LimitCountPlugin::Take(PluginContext& ctx, const Rule& rule, std::string_view key,
                            uint64_t count, uint64_t window_s, Scratch& scratch) const {
  CounterKey id = Fingerprint(config_.identity_prefix, key);
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
  if (config_.show_limit_quota_header) {
    std::string& v = scratch.value;
    v.clear();
    AppendDecimal(count, &v);
    ctx.SetResponseHeader(rule.limit_header, v);
    v.clear();
    AppendDecimal(allowed ? remaining : 0, &v);
    ctx.SetResponseHeader(rule.remaining_header, v);
    v.clear();
    AppendCentiseconds(reset_cs, &v);
    ctx.SetResponseHeader(rule.reset_header, v);
  }
  if (allowed) return true;
  Reject(ctx);
  return false;
}

void LimitCountPlugin::Reject(PluginContext& ctx) const {
  ctx.Respond(config_.rejected_code, config_.rejected_body);
}

StatusOr<PluginConstSharedPtr> LimitCountFactory::MakePlugin(Config config,
                                                             FactoryContext& ctx) const {
  std::shared_ptr<CounterTable> table;
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
  return PluginConstSharedPtr(
      std::make_shared<const LimitCountPlugin>(std::move(config), std::move(table), ctx.clock()));
}

}  // namespace turnpike::plugins::limit_count
