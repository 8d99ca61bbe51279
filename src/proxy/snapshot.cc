#include "proxy/snapshot.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <unordered_map>

#include "base/courtesy.h"
#include "base/http_method.h"
#include "metrics/registry.h"
#include "proxy/upstream_builder.h"
#include "turnpike/factory_context.h"

namespace turnpike::proxy {
namespace {

// Whether a plugin configuration mentions a post_arg_* variable anywhere (a vars expression,
// a "$post_arg_x" template...). Plugins see variables only through names in their
// configuration, so this finds every plugin that may read one; a false positive only costs
// buffering a form body.
bool MentionsPostArg(const nlohmann::json& conf) {
  constexpr std::string_view kPrefix = "post_arg_";
  if (conf.is_string()) {
    return conf.get_ref<const std::string&>().find(kPrefix) != std::string::npos;
  }
  if (conf.is_object()) {
    for (auto it = conf.begin(); it != conf.end(); ++it) {
      if (it.key().find(kPrefix) != std::string::npos || MentionsPostArg(it.value())) return true;
    }
  } else if (conf.is_array()) {
    for (const nlohmann::json& item : conf) {
      if (MentionsPostArg(item)) return true;
    }
  }
  return false;
}

// Whether some entry of `chain` has `flag` set (reads_post_args, reads_request_body).
bool AnyEntry(const PluginChain& chain, bool PluginChain::Entry::*flag) {
  for (const PluginChain::Entry& e : chain.entries) {
    if (e.*flag) return true;
  }
  return false;
}

const nlohmann::json& EmptyObject() {
  static const nlohmann::json* empty = new nlohmann::json(nlohmann::json::object());
  return *empty;
}

// The FactoryContext of one plugin instance.
class InstanceContext final : public FactoryContext {
 public:
  InstanceContext(PluginOwner owner, const nlohmann::json& metadata, const nlohmann::json& attr,
                  Clock& clock, int workers, MetricsRegistry& metrics)
      : owner_(owner),
        metadata_(metadata),
        attr_(attr),
        clock_(clock),
        workers_(workers),
        metrics_(metrics) {}
  PluginOwner owner() const override { return owner_; }
  const nlohmann::json& metadata() const override { return metadata_; }
  const nlohmann::json& attr() const override { return attr_; }
  Clock& clock() override { return clock_; }
  int worker_count() const override { return workers_; }
  MetricsRegistry& metrics() override { return metrics_; }

 private:
  PluginOwner owner_;
  const nlohmann::json& metadata_;
  const nlohmann::json& attr_;
  Clock& clock_;
  int workers_;
  MetricsRegistry& metrics_;
};

// Compiles one owner's `plugins:` into chain entries. Returns false (with `error`) when a
// plugin is unknown, not enabled, or its configuration is invalid: the owner is skipped.
// An instance whose identity (PluginInstances) is the same as in the previous snapshot is
// taken over from it instead of created; a failed one never is, as it is not recorded.
uint64_t NextBuildNumber() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

class PluginCompiler {
 public:
  PluginCompiler(const BuildInput& input, PluginInstances* instances, BuildStats* stats)
      : registry_(input.plugins),
        gateway_(*input.gateway),
        clock_(input.clock != nullptr ? *input.clock : SystemClock::Instance()),
        workers_(std::max(1, input.gateway->worker_processes)),
        instances_(instances),
        stats_(stats) {
    const std::optional<std::vector<std::string>>& enabled =
        input.routes->enabled_plugins ? input.routes->enabled_plugins : input.gateway->plugins;
    if (enabled) {
      restricted_ = true;
      enabled_ = *enabled;
    }
    for (const config::PluginMetadataSpec& m : input.routes->plugin_metadata) {
      metadata_.emplace(m.id, &m.fields);
    }
    if (input.metrics != nullptr) {
      metrics_ = input.metrics;
    } else {
      own_metrics_ = std::make_unique<metrics::Registry>(workers_);
      metrics_ = own_metrics_.get();
    }
    PluginInstances::Environment env{registry_, input.metrics, &clock_, workers_};
    instances_->set_environment(env);
    if (input.previous != nullptr && input.metrics != nullptr &&
        input.previous->plugin_instances.environment() == env) {
      previous_ = &input.previous->plugin_instances;
      instances_->ReserveLike(*previous_);
    }
  }

  bool Compile(const std::vector<config::PluginSpec>& specs, PluginOwner owner,
               std::vector<PluginChain::Entry>* out, config::ConfigError* error) {
    size_t mark = instances_->size();
    if (CompileEach(specs, owner, out, error)) return true;
    instances_->Truncate(mark);  // the owner is skipped: its instances are not in the snapshot
    return false;
  }

 private:
  bool CompileEach(const std::vector<config::PluginSpec>& specs, PluginOwner owner,
                   std::vector<PluginChain::Entry>* out, config::ConfigError* error) {
    for (const config::PluginSpec& spec : specs) {
      const PluginFactory* factory = registry_ ? registry_->Find(spec.name) : nullptr;
      bool enabled =
          !restricted_ || std::find(enabled_.begin(), enabled_.end(), spec.name) != enabled_.end();
      if (factory == nullptr || !enabled) {
        *error = {spec.loc, spec.path, "unknown plugin [" + spec.name + "]"};
        return false;
      }
      nlohmann::json conf = spec.conf;
      if (conf.is_object()) {
        auto meta = conf.find("_meta");
        if (meta != conf.end()) {
          bool disabled = false;
          if (meta->is_object()) {
            auto disable = meta->find("disable");
            if (disable != meta->end()) {
              // APISIX's injected `_meta` schema: a boolean (json::value() would throw).
              if (!disable->is_boolean()) {
                *error = {spec.loc, spec.path,
                          "failed to check the configuration of plugin " + spec.name +
                              " err: property \"_meta\" validation failed: property \"disable\" "
                              "validation failed: wrong type: expected boolean, got " +
                              disable->type_name()};
                return false;
              }
              disabled = disable->get<bool>();
            }
          }
          conf.erase(meta);
          if (disabled) continue;  // `_meta.disable: true` turns this instance off
        }
      }
      auto meta = metadata_.find(spec.name);
      const nlohmann::json& metadata = meta != metadata_.end() ? *meta->second : EmptyObject();
      const nlohmann::json* attr = gateway_.PluginAttr(spec.name);
      const nlohmann::json& attr_or_empty = attr != nullptr ? *attr : EmptyObject();
      identity_.clear();
      PluginInstances::AppendIdentity(&identity_, owner, spec.name, conf);
      uint64_t hash = PluginInstances::Hash(identity_);
      const PluginConstSharedPtr* kept = nullptr;
      if (SettingsUnchanged(spec.name, metadata, attr_or_empty)) {
        kept = previous_->Find(identity_, hash);
      }
      PluginConstSharedPtr plugin;
      if (kept != nullptr) {
        plugin = *kept;
        ++stats_->reused_plugins;
      } else {
        InstanceContext ctx(owner, metadata, attr_or_empty, clock_, workers_, *metrics_);
        StatusOr<PluginConstSharedPtr> created = factory->Create(conf, ctx);
        if (!created.ok()) {
          *error = {spec.loc, spec.path,
                    "failed to check the configuration of plugin " + spec.name +
                        " err: " + created.status().message()};
          return false;
        }
        plugin = std::move(created).value();
        ++stats_->created_plugins;
      }
      if (Status admitted = factory->Admit(*plugin, build_); !admitted.ok()) {
        *error = {spec.loc, spec.path,
                  "failed to check the configuration of plugin " + spec.name +
                      " err: " + admitted.message()};
        return false;
      }
      instances_->Add(identity_, hash, plugin);
      bool reads_body = plugin->reads_request_body();
      out->push_back(
          {spec.name, factory->priority(), std::move(plugin), MentionsPostArg(conf), reads_body});
    }
    return true;
  }

  // Whether `plugin`'s metadata and attr are those of the previous snapshot (false without
  // one). Encoded once per plugin name and build, and recorded for the next build.
  bool SettingsUnchanged(const std::string& plugin, const nlohmann::json& metadata,
                         const nlohmann::json& attr) {
    auto [it, added] = settings_unchanged_.try_emplace(plugin, false);
    if (added) {
      std::string encoding;
      PluginInstances::AppendEncoded(&encoding, metadata);
      PluginInstances::AppendEncoded(&encoding, attr);
      const std::string* before = previous_ != nullptr ? previous_->Settings(plugin) : nullptr;
      it->second = before != nullptr && *before == encoding;
      instances_->SetSettings(plugin, std::move(encoding));
    }
    return it->second;
  }

  const PluginRegistry* registry_;
  const config::GatewayConfig& gateway_;
  Clock& clock_;
  int workers_;
  bool restricted_ = false;
  std::vector<std::string> enabled_;
  std::unordered_map<std::string_view, const nlohmann::json*> metadata_;  // by plugin name
  MetricsRegistry* metrics_ = nullptr;
  std::unique_ptr<metrics::Registry> own_metrics_;
  PluginInstances* instances_;
  const PluginInstances* previous_ = nullptr;  // null: nothing to take over
  BuildStats* stats_;
  // This build's number for PluginFactory::Admit: distinct for every build of the process.
  const uint64_t build_ = NextBuildNumber();
  std::string identity_;                                      // scratch
  std::unordered_map<std::string, bool> settings_unchanged_;  // by plugin name
};

// Numbers the distinct instances with worker state (Snapshot::worker_state_plugins) and
// stores each one's slot in its entries. An instance may sit in several chains (a service's
// plugins are copied into each of its routes): one slot per instance.
void NumberWorkerStates(Snapshot* snap) {
  std::unordered_map<const Plugin*, uint32_t> slots;
  auto number = [&](PluginChain& chain) {
    for (PluginChain::Entry& e : chain.entries) {
      if (!e.plugin->has_worker_state()) continue;
      auto [it, added] =
          slots.emplace(e.plugin.get(), static_cast<uint32_t>(snap->worker_state_plugins.size()));
      if (added) snap->worker_state_plugins.push_back(e.plugin.get());
      e.worker_state_slot = it->second;
    }
  };
  for (PluginChain& chain : snap->global_rules) number(chain);
  for (Route& route : snap->routes) number(route.chain);
}

// Overlays `top` on `base` by plugin name (a plugin in `top` wins).
void Overlay(std::vector<PluginChain::Entry>* base, const std::vector<PluginChain::Entry>& top) {
  for (const PluginChain::Entry& e : top) {
    auto it = std::find_if(base->begin(), base->end(),
                           [&](const PluginChain::Entry& b) { return b.name == e.name; });
    if (it != base->end()) {
      *it = e;
    } else {
      base->push_back(e);
    }
  }
}

// An upstream's discovery_type must be configured under config.yaml's `discovery:` (the
// daemon starts a provider for each entry there, and refuses to start on an unknown one):
// otherwise the item owning the upstream is skipped with an error, as a bad plugin is.
bool DiscoveryConfigured(const config::GatewayConfig& gateway, const config::UpstreamSpec& spec,
                         BuildReport* report) {
  if (spec.discovery_type.empty() || gateway.Discovery(spec.discovery_type) != nullptr) {
    return true;
  }
  report->errors.push_back({spec.discovery_loc, spec.discovery_path,
                            "discovery type \"" + spec.discovery_type +
                                "\" is not configured (config.yaml has no discovery." +
                                spec.discovery_type + ")"});
  return false;
}

}  // namespace

SnapshotConstSharedPtr BuildSnapshot(const BuildInput& input, BuildReport* report) {
  const config::GatewayConfig& gateway = *input.gateway;
  const config::RoutesConfig& routes = *input.routes;
  BuildStats& stats = report->stats;
  auto snap = std::make_shared<Snapshot>();
  snap->version = input.version;
  UpstreamBuilder builder(gateway, input.previous, snap.get(), &report->warnings, &stats);
  PluginCompiler plugins(input, &snap->plugin_instances, &stats);

  std::unordered_map<std::string, const Upstream*> upstream_by_id;
  for (const config::UpstreamSpec& spec : routes.upstreams) {
    if (!DiscoveryConfigured(gateway, spec, report)) {  // skipped: its routes get 502
      report->skipped.push_back("upstreams/" + spec.id);
      continue;
    }
    upstream_by_id[spec.id] = builder.Add(spec, "upstreams/" + spec.id);
  }

  // Services and plugin configs: compiled once, shared by the routes that use them.
  struct CompiledService {
    const config::ServiceSpec* spec = nullptr;
    const Upstream* upstream = nullptr;  // inline upstream
    std::vector<PluginChain::Entry> plugins;
  };
  std::unordered_map<std::string, CompiledService> services;
  for (const config::ServiceSpec& spec : routes.services) {
    CompiledService s;
    s.spec = &spec;
    config::ConfigError error;
    if (!plugins.Compile(spec.plugins, {PluginOwnerKind::kService, spec.id}, &s.plugins, &error)) {
      report->errors.push_back(std::move(error));
      report->skipped.push_back("services/" + spec.id);
      continue;
    }
    if (spec.upstream && !DiscoveryConfigured(gateway, *spec.upstream, report)) {
      report->skipped.push_back("services/" + spec.id);
      continue;
    }
    if (spec.upstream) s.upstream = builder.Add(*spec.upstream, "services/" + spec.id);
    services.emplace(spec.id, std::move(s));
  }
  std::unordered_map<std::string, std::vector<PluginChain::Entry>> plugin_configs;
  for (const config::PluginConfigSpec& spec : routes.plugin_configs) {
    std::vector<PluginChain::Entry> entries;
    config::ConfigError error;
    if (!plugins.Compile(spec.plugins, {PluginOwnerKind::kPluginConfig, spec.id}, &entries,
                         &error)) {
      report->errors.push_back(std::move(error));
      continue;
    }
    plugin_configs.emplace(spec.id, std::move(entries));
  }
  for (const config::GlobalRuleSpec& spec : routes.global_rules) {
    PluginChain chain;
    config::ConfigError error;
    if (!plugins.Compile(spec.plugins, {PluginOwnerKind::kGlobalRule, spec.id}, &chain.entries,
                         &error)) {
      report->errors.push_back(std::move(error));
      continue;
    }
    chain.Sort();
    snap->global_phases |= chain.phases;
    if (AnyEntry(chain, &PluginChain::Entry::reads_post_args)) snap->needs_post_args = true;
    if (AnyEntry(chain, &PluginChain::Entry::reads_request_body)) snap->needs_request_body = true;
    snap->global_rules.push_back(std::move(chain));
  }

  // Client-address rules (config.yaml; validated there).
  if (auto from = expr::IpMatcher::Build([&] {
        std::vector<std::string> ips;
        for (const std::string& e : gateway.real_ip_from) {
          if (e == "unix:") {
            snap->addresses.real_ip_from_unix = true;
          } else {
            ips.push_back(e);
          }
        }
        return ips;
      }());
      from.ok()) {
    snap->addresses.real_ip_from = std::move(from).value();
  } else {
    report->warnings.push_back("nginx_config.http.real_ip_from: " + from.status().message());
  }
  snap->addresses.real_ip_header.clear();
  for (char c : gateway.real_ip_header) {
    snap->addresses.real_ip_header.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c);
  }
  if (!gateway.trusted_addresses.empty()) {
    if (auto trusted = expr::IpMatcher::Build(gateway.trusted_addresses); trusted.ok()) {
      snap->addresses.has_trusted = true;
      snap->addresses.trusted = std::move(trusted).value();
    } else {
      report->warnings.push_back("apisix.trusted_addresses: " + trusted.status().message());
    }
  }
  snap->addresses.real_ip_recursive = gateway.real_ip_recursive;
  snap->delete_uri_tail_slash = gateway.delete_uri_tail_slash;

  std::vector<router::RouteKey> keys;
  keys.reserve(routes.routes.size());
  for (const config::RouteSpec& spec : routes.routes) {
    base::CourtesyPoint();
    if (spec.status == 0) continue;  // disabled routes are not matched at all
    std::vector<PluginChain::Entry> own;
    config::ConfigError error;
    size_t instances_before = snap->plugin_instances.size();
    if (!plugins.Compile(spec.plugins, {PluginOwnerKind::kRoute, spec.id}, &own, &error)) {
      report->errors.push_back(std::move(error));
      report->skipped.push_back("routes/" + spec.id);
      continue;  // the route is skipped, the rest applies
    }
    if (spec.upstream && !DiscoveryConfigured(gateway, *spec.upstream, report)) {
      snap->plugin_instances.Truncate(instances_before);
      report->skipped.push_back("routes/" + spec.id);
      continue;
    }
    std::optional<expr::IpMatcher> remote_addrs;
    if (!spec.remote_addrs.empty()) {
      StatusOr<expr::IpMatcher> m = expr::IpMatcher::Build(spec.remote_addrs);
      if (!m.ok()) {
        report->errors.push_back({spec.loc, spec.path + ".remote_addrs", m.status().message()});
        snap->plugin_instances.Truncate(instances_before);  // not in the snapshot
        report->skipped.push_back("routes/" + spec.id);
        continue;
      }
      remote_addrs = std::move(m).value();
    }
    expr::ExprConstPtr vars;
    if (spec.vars) {
      StatusOr<expr::ExprConstPtr> compiled = expr::Expr::Compile(spec.vars->expr);
      if (!compiled.ok()) {
        report->errors.push_back({spec.vars->loc, spec.vars->path, compiled.status().message()});
        snap->plugin_instances.Truncate(instances_before);
        report->skipped.push_back("routes/" + spec.id);
        continue;
      }
      vars = std::move(compiled).value();
    }
    Route route;
    route.remote_addrs = std::move(remote_addrs);
    route.vars = std::move(vars);
    route.id = spec.id;
    route.name = spec.name;
    if (spec.timeout) {
      route.has_timeout = true;
      route.timeout = *spec.timeout;
    }
    const CompiledService* service = nullptr;
    if (!spec.service_id.empty()) {
      auto it = services.find(spec.service_id);
      if (it == services.end()) {
        route.fail_status = 404;  // APISIX: a route whose service is missing answers 404
      } else {
        service = &it->second;
        route.service_id = spec.service_id;
        route.service_name = service->spec->name;
        route.chain.entries = service->plugins;
      }
    }
    if (!spec.plugin_config_id.empty()) {
      auto it = plugin_configs.find(spec.plugin_config_id);
      if (it == plugin_configs.end()) {
        if (route.fail_status == 0) route.fail_status = 503;
      } else {
        Overlay(&route.chain.entries, it->second);
      }
    }
    route.enable_websocket =
        spec.enable_websocket.value_or(service != nullptr && service->spec->enable_websocket);
    Overlay(&route.chain.entries, own);
    route.chain.Sort();
    route.needs_post_args = (route.vars != nullptr && route.vars->Reads(VarRef::Kind::kPostArg)) ||
                            AnyEntry(route.chain, &PluginChain::Entry::reads_post_args);
    if (route.needs_post_args) snap->needs_post_args = true;
    if (AnyEntry(route.chain, &PluginChain::Entry::reads_request_body)) {
      snap->needs_request_body = true;
    }

    // Upstream: upstream_id wins over an inline upstream; the route's over the service's.
    std::string_view upstream_id = spec.upstream_id;
    if (upstream_id.empty() && !spec.upstream && service != nullptr) {
      upstream_id = service->spec->upstream_id;
    }
    if (!upstream_id.empty()) {
      auto it = upstream_by_id.find(std::string(upstream_id));
      if (it != upstream_by_id.end()) {
        route.upstream = it->second;
      } else if (route.fail_status == 0) {
        route.fail_status = 502;
        report->warnings.push_back(spec.loc.file + ":" + std::to_string(spec.loc.line) +
                                   ": route " + spec.id + ": upstream_id " +
                                   std::string(upstream_id) + " not found; requests get 502");
      }
    } else if (spec.upstream) {
      route.upstream = builder.Add(*spec.upstream, "routes/" + spec.id);
    } else if (service != nullptr && service->upstream != nullptr) {
      route.upstream = service->upstream;
    }
    if (route.upstream == nullptr && route.fail_status == 0) route.fail_status = 503;

    router::RouteKey key;
    key.uris = spec.uris;
    key.hosts = !spec.hosts.empty() || service == nullptr ? spec.hosts : service->spec->hosts;
    key.priority = spec.priority;
    if (!spec.methods.empty()) {
      key.methods = 0;
      for (const std::string& m : spec.methods) {
        if (auto parsed = base::ParseRouteMethod(m)) key.methods |= base::MaskOf(*parsed);
      }
    }
    key.has_filter = route.remote_addrs.has_value() || route.vars != nullptr;
    key.payload = static_cast<uint32_t>(snap->routes.size());
    // Version in the high half: a reload never reuses a key a worker may have cached.
    route.metrics_key = (snap->version << 32) | (snap->routes.size() + 1);
    snap->routes.push_back(std::move(route));
    keys.push_back(std::move(key));
  }
  router::Mode mode = router::Mode::kHostUri;
  if (gateway.router_mode == config::RouterMode::kUri) mode = router::Mode::kUri;
  if (gateway.router_mode == config::RouterMode::kUriWithParameter) {
    mode = router::Mode::kUriWithParameter;
  }
  snap->table = router::RouteTable::Build(std::move(keys), mode);
  NumberWorkerStates(snap.get());
  snap->plugin_instances.Seal();
  stats.routes = snap->routes.size();
  stats.upstreams = snap->upstreams.size();
  return snap;
}

}  // namespace turnpike::proxy
