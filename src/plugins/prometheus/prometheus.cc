#include "plugins/prometheus/prometheus.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace turnpike::plugins::prometheus {
namespace {

// The request state that makes a request count once however many instances run its log
// hook; its key is shared by every instance.
struct Counted {
  bool done = false;
};
constexpr char kCountedKey = 0;

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 29);
}

// Eight bytes at a time: the dynamic part is a few short strings (the node's address, extra
// labels' values).
uint64_t HashBytes(std::string_view s) {
  uint64_t h = s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = Mix(h, w);
  }
  if (i < s.size()) {
    uint64_t w = 0;
    std::memcpy(&w, s.data() + i, s.size() - i);
    h = Mix(h, w);
  }
  return h;
}

constexpr size_t kProbes = 4;  // slots a label set may use in a worker's cache

std::vector<std::string> LabelNames(Metric m, const Attr& attr) {
  std::vector<std::string> names;
  for (std::string_view l : BuiltinLabels(m)) names.emplace_back(l);
  for (const ExtraLabel& l : attr.metrics[m].extra_labels) names.push_back(l.name);
  return names;
}

}  // namespace

StatusOr<Families> RegisterFamilies(MetricsRegistry& registry, const Attr& attr) {
  Families f;
  const std::string& p = attr.metric_prefix;
  StatusOr<Counter*> status =
      registry.AddCounter({p + "http_status", "HTTP status codes per service in APISIX",
                           LabelNames(kHttpStatus, attr), attr.max_series});
  if (!status.ok()) return status.status();
  StatusOr<Histogram*> latency = registry.AddHistogram(
      {p + "http_latency", "HTTP request latency in milliseconds per service in APISIX",
       LabelNames(kHttpLatency, attr), attr.max_series},
      attr.default_buckets);
  if (!latency.ok()) return latency.status();
  StatusOr<Counter*> bandwidth = registry.AddCounter(
      {p + "bandwidth", "Total bandwidth in bytes consumed per service in APISIX",
       LabelNames(kBandwidth, attr), attr.max_series});
  if (!bandwidth.ok()) return bandwidth.status();
  f.status = status.value();
  f.latency = latency.value();
  f.bandwidth = bandwidth.value();
  return f;
}

// One label set of a request, bound to its cells on this worker.
struct PrometheusPlugin::Entry {
  uint64_t hash = 0;  // 0: empty
  uint64_t route_key = 0;
  const char* uri = nullptr;   // the matched patterns, by address: they live in the snapshot
  const char* host = nullptr;  // whose version is in route_key
  int code = 0;
  bool from_upstream = false;
  std::string dynamic;  // node and the extra labels' variable values, '\0'-terminated each
  CounterCell status;
  HistogramCell request, upstream, apisix;
  CounterCell ingress, egress;

  // Whether this entry is the label set of a request with these fields.
  bool Matches(const MatchedRoute& route, int c, bool upstream_source, std::string_view dyn) const {
    return route_key == route.key && uri == route.matched_uri.data() &&
           host == route.matched_host.data() && code == c && from_upstream == upstream_source &&
           dynamic == dyn;
  }
};

// This worker's bound label sets: open addressing, a few probes, then the oldest-inserted
// slot of the probe window's start is taken over.
struct PrometheusPlugin::Cache final : WorkerState {
  explicit Cache(int worker_index) : worker(worker_index), entries(kCacheEntries) {}
  int worker;
  std::vector<Entry> entries;
  std::string scratch;                   // the request's dynamic part (capacity reused)
  std::vector<std::string_view> extras;  // the request's extra-label values, all metrics
  std::vector<std::string_view> values;  // label values while binding
  std::string code_text;                 // while binding
  Entry* last = nullptr;                 // the entry of the previous request (or null)

  // Doubles the table and re-inserts every entry (one without a free probe slot is dropped:
  // it is rebound on its next use, as at full size).
  void Grow() {
    last = nullptr;
    std::vector<Entry> old(entries.size() * 2);
    old.swap(entries);
    size_t mask = entries.size() - 1;
    for (Entry& e : old) {
      if (e.hash == 0) continue;
      for (size_t i = 0; i < kProbes; ++i) {
        Entry& slot = entries[(e.hash + i) & mask];
        if (slot.hash == 0) {
          slot = std::move(e);
          break;
        }
      }
    }
  }
};

std::unique_ptr<WorkerState> PrometheusPlugin::CreateWorkerState(
    const WorkerEnvironment& env) const {
  auto cache = std::make_unique<Cache>(env.worker_index);
  size_t extras = 0;
  for (const MetricAttr& m : attr_->metrics) extras += m.extra_labels.size();
  cache->extras.reserve(extras);
  cache->values.reserve(16 + extras);
  cache->scratch.reserve(64);
  return cache;
}

void PrometheusPlugin::Log(PluginContext& ctx) const {
  Counted& counted = ctx.RequestState<Counted>(&kCountedKey);
  if (counted.done) return;
  counted.done = true;
  Cache& cache = ctx.worker_state<Cache>(*this);

  MatchedRoute route = ctx.matched_route();
  int code = ctx.response_status();
  bool from_upstream = ctx.response_from_upstream();
  std::string_view node = ctx.Get(balancer_ip_).value_or(std::string_view());
  cache.scratch.assign(node);
  cache.scratch.push_back('\0');
  cache.extras.clear();
  for (const MetricAttr& m : attr_->metrics) {
    for (const ExtraLabel& l : m.extra_labels) {
      std::string_view v = l.value;
      if (l.is_var) {
        v = ctx.Get(l.var).value_or(std::string_view());
        cache.scratch.append(v).push_back('\0');
      }
      cache.extras.push_back(v);
    }
  }
  // Most requests repeat the label set of the one before on this worker: that entry is
  // checked first, without hashing.
  if (cache.last != nullptr && cache.last->hash != 0 &&
      cache.last->Matches(route, code, from_upstream, cache.scratch)) {
    Count(ctx, *cache.last);
    return;
  }
  uint64_t h = Mix(Mix(Mix(route.key, reinterpret_cast<uintptr_t>(route.matched_uri.data())),
                       reinterpret_cast<uintptr_t>(route.matched_host.data()) ^
                           (static_cast<uint64_t>(code) << 1 | (from_upstream ? 1 : 0))),
                   HashBytes(cache.scratch)) |
               1;

  Entry* found = nullptr;
  Entry* free_slot = nullptr;
  size_t mask = cache.entries.size() - 1;
  for (size_t i = 0; i < kProbes; ++i) {
    Entry& e = cache.entries[(h + i) & mask];
    if (e.hash == 0) {
      if (free_slot == nullptr) free_slot = &e;
      continue;
    }
    if (e.hash == h && e.Matches(route, code, from_upstream, cache.scratch)) {
      found = &e;
      break;
    }
  }
  if (found == nullptr) {
    if (free_slot == nullptr && cache.entries.size() < kMaxCacheEntries) {
      cache.Grow();
      mask = cache.entries.size() - 1;
      for (size_t i = 0; i < kProbes && free_slot == nullptr; ++i) {
        Entry& e = cache.entries[(h + i) & mask];
        if (e.hash == 0) free_slot = &e;
      }
    }
    found = free_slot != nullptr ? free_slot : &cache.entries[h & mask];
    Bind(ctx, route, code, from_upstream, node, cache, *found);
    found->hash = h;
  }
  cache.last = found;
  Count(ctx, *found);
}

// The request's observations into the cells of its label set.
void PrometheusPlugin::Count(PluginContext& ctx, Entry& e) {
  RequestTiming t = ctx.timing();
  int64_t latency = std::max<int64_t>(0, t.latency_ms);
  e.request.Observe(static_cast<double>(latency));
  int64_t upstream = 0;
  if (t.upstream_ms >= 0) {
    upstream = t.upstream_ms;
    e.upstream.Observe(static_cast<double>(upstream));
  }
  // APISIX's own share: the request's time minus the upstream's (client reads included).
  e.apisix.Observe(static_cast<double>(std::max<int64_t>(0, latency - upstream)));
  e.status.Add(1);
  RequestSizes sizes = ctx.sizes();
  e.ingress.Add(static_cast<uint64_t>(std::max<int64_t>(0, sizes.request_length)));
  e.egress.Add(static_cast<uint64_t>(std::max<int64_t>(0, sizes.bytes_sent)));
}

// A label set seen for the first time on this worker (or evicted): its label strings, once.
void PrometheusPlugin::Bind(PluginContext& /*ctx*/, const MatchedRoute& route, int code,
                            bool from_upstream, std::string_view node, Cache& cache,
                            Entry& e) const {
  e.route_key = route.key;
  e.uri = route.matched_uri.data();
  e.host = route.matched_host.data();
  e.code = code;
  e.from_upstream = from_upstream;
  e.dynamic.assign(cache.scratch);

  std::string_view route_label =
      config_.prefer_name && !route.route_name.empty() ? route.route_name : route.route_id;
  std::string_view service_label =
      config_.prefer_name && !route.service_name.empty() ? route.service_name : route.service_id;
  cache.code_text = std::to_string(code);
  size_t extra_at = 0;
  auto build = [&](Metric m, std::initializer_list<std::string_view> builtin) {
    cache.values.assign(builtin.begin(), builtin.end());
    for (size_t i = 0; i < cache.values.size(); ++i) {
      if (config_.disabled[m][i]) cache.values[i] = std::string_view();
    }
    for (size_t i = 0; i < attr_->metrics[m].extra_labels.size(); ++i) {
      cache.values.push_back(cache.extras[extra_at + i]);
    }
    return LabelValues(cache.values);
  };
  constexpr std::string_view kType = "traditional_http";
  e.status = families_.status->Bind(
      cache.worker, build(kHttpStatus, {cache.code_text, route_label, route.matched_uri,
                                        route.matched_host, service_label, "", node, kType, "", "",
                                        from_upstream ? "upstream" : "apisix"}));
  extra_at += attr_->metrics[kHttpStatus].extra_labels.size();
  auto latency = [&](std::string_view type) {
    return families_.latency->Bind(
        cache.worker,
        build(kHttpLatency, {type, route_label, service_label, "", node, kType, "", ""}));
  };
  e.request = latency("request");
  e.upstream = latency("upstream");
  e.apisix = latency("apisix");
  extra_at += attr_->metrics[kHttpLatency].extra_labels.size();
  auto bandwidth = [&](std::string_view type) {
    return families_.bandwidth->Bind(
        cache.worker,
        build(kBandwidth, {type, route_label, service_label, "", node, kType, "", ""}));
  };
  e.ingress = bandwidth("ingress");
  e.egress = bandwidth("egress");
}

StatusOr<PluginConstSharedPtr> PrometheusFactory::MakePlugin(Config config,
                                                             FactoryContext& ctx) const {
  StatusOr<Attr> attr = ParseAttr(ctx.attr());
  if (!attr.ok()) return attr.status();
  StatusOr<Families> families = RegisterFamilies(ctx.metrics(), attr.value());
  if (!families.ok()) return families.status();
  return PluginConstSharedPtr(std::make_shared<const PrometheusPlugin>(
      std::move(config), std::make_shared<const Attr>(std::move(attr).value()), families.value()));
}

}  // namespace turnpike::plugins::prometheus
