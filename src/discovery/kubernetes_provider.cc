#include "discovery/kubernetes_provider.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "base/courtesy.h"
#include "discovery/json_answer.h"
#include "discovery/parts.h"
#include "expr/regex.h"

namespace turnpike::discovery {
namespace {

constexpr char kServiceNameLabel[] = "kubernetes.io/service-name";

using simdjson::dom::element;

// obj[key] when it is an array.
bool ArrayMember(element obj, const char* key, simdjson::dom::array* out) {
  return obj[key].get_array().get(*out) == simdjson::SUCCESS;
}

// A JSON scalar as Lua's tostring() writes it (strings and integers only).
bool ScalarText(element obj, const char* key, std::string* out) {
  element v;
  if (!JsonMember(obj, key, &v)) return false;
  std::string_view text;
  if (v.get_string().get(text) == simdjson::SUCCESS) {
    out->assign(text);
    return true;
  }
  int64_t n = 0;
  if (v.get_int64().get(n) == simdjson::SUCCESS) {
    *out = std::to_string(n);
    return true;
  }
  return false;
}

// The key APISIX files a port's nodes under: its name, else targetPort, else its number.
std::string PortKey(element port) {
  std::string key;
  if (ScalarText(port, "name", &key)) return key;
  if (ScalarText(port, "targetPort", &key)) return key;
  ScalarText(port, "port", &key);
  return key;
}

int PortNumber(element port) {
  int64_t n = 0;
  if (port["port"].get_int64().get(n) != simdjson::SUCCESS) return 0;
  return n >= 0 && n <= 65535 ? static_cast<int>(n) : -1;  // -1: fails the node schema
}

void SortNodes(DiscoveredNodes* nodes) { std::sort(nodes->begin(), nodes->end(), NodeKeyLess); }

// metadata.namespace and metadata.name, both non-empty; `md` gets the metadata.
bool Metadata(element object, std::string* ns, std::string* name, element* md) {
  if (!JsonMember(object, "metadata", md)) return false;
  ns->assign(JsonStringMember(*md, "namespace"));
  name->assign(JsonStringMember(*md, "name"));
  return !ns->empty() && !name->empty();
}

}  // namespace

bool ReadEndpoints(element object, int weight, std::string* ns, std::string* key,
                   KubePortNodes* nodes) {
  std::string name;
  element md;
  if (!Metadata(object, ns, &name, &md)) return false;
  *key = *ns + "/" + name;
  nodes->clear();
  simdjson::dom::array subsets;
  if (!ArrayMember(object, "subsets", &subsets)) return true;
  for (element subset : subsets) {
    simdjson::dom::array addresses;
    simdjson::dom::array ports;
    if (!ArrayMember(subset, "addresses", &addresses) || !ArrayMember(subset, "ports", &ports)) {
      continue;
    }
    for (element port : ports) {
      DiscoveredNodes& list = (*nodes)[PortKey(port)];
      int number = PortNumber(port);
      for (element address : addresses) {
        base::CourtesyPoint();
        list.push_back(
            DiscoveredNode{std::string(JsonStringMember(address, "ip")), number, weight, 0});
      }
    }
  }
  return true;
}

bool ReadEndpointSlice(element object, int weight, std::string* ns, std::string* key,
                       std::string* part, KubePortNodes* nodes) {
  element md;
  if (!Metadata(object, ns, part, &md)) return false;
  element labels;
  std::string_view service;
  if (JsonMember(md, "labels", &labels)) {
    service = JsonStringMember(labels, kServiceNameLabel);
  }
  if (service.empty()) return false;
  *key = *ns + "/";
  key->append(service);
  nodes->clear();
  simdjson::dom::array endpoints;
  simdjson::dom::array ports;
  if (!ArrayMember(object, "endpoints", &endpoints) || !ArrayMember(object, "ports", &ports)) {
    return true;
  }
  // Every endpoint of a slice has the slice's ports: their keys are made once, not per
  // endpoint (a string and a map lookup each).
  struct SlicePort {
    std::string key;
    int number;
    DiscoveredNodes* list = nullptr;
  };
  std::vector<SlicePort> slice_ports;
  for (element port : ports) slice_ports.push_back({PortKey(port), PortNumber(port)});
  for (element ep : endpoints) {
    base::CourtesyPoint();
    simdjson::dom::array addresses;
    element conditions;
    bool ready = false;
    if (!ArrayMember(ep, "addresses", &addresses) || !JsonMember(ep, "conditions", &conditions) ||
        conditions["ready"].get_bool().get(ready) != simdjson::SUCCESS || !ready) {
      continue;  // only endpoints reported ready (APISIX: conditions.ready must be true)
    }
    for (SlicePort& port : slice_ports) {
      // The port's list is made at its first ready endpoint (a slice with none adds no key).
      if (port.list == nullptr) port.list = &(*nodes)[port.key];
      for (element address : addresses) {
        std::string_view ip;
        if (address.get_string().get(ip) == simdjson::SUCCESS) {
          port.list->push_back(DiscoveredNode{std::string(ip), port.number, weight, 0});
        }
      }
    }
  }
  return true;
}

struct KubernetesProvider::Cluster {
  KubernetesClusterConfig config;
  std::vector<expr::Regex> namespace_regexes;
  pcre2_match_data* match_data = nullptr;
  std::unique_ptr<KubeInformer> informer;
  // namespace/name -> part (slice name; "" for Endpoints) -> port key -> nodes (sorted; a
  // list the object did not change keeps its pointer, so the Directory reuses what it made
  // of it: DiscoverySink::PublishParts).
  std::unordered_map<std::string, std::map<std::string, SharedPortNodes>> store;
  // namespace/name -> the watched services naming it.
  std::map<std::string, std::set<ServiceRef>> watchers;

  ~Cluster() {
    if (match_data != nullptr) pcre2_match_data_free(match_data);
  }

  // namespace_selector's match / not_match (equal / not_equal went to the API server).
  bool Selected(const std::string& ns) const {
    if (config.namespace_filter != NamespaceFilter::kMatch &&
        config.namespace_filter != NamespaceFilter::kNotMatch) {
      return true;
    }
    bool matched = false;
    for (const expr::Regex& re : namespace_regexes) {
      // ngx.re.match's first match must be the whole namespace.
      if (re.Match(ns, match_data) >= 0) {
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match_data);
        if (ov[0] == 0 && ov[1] == ns.size()) {
          matched = true;
          break;
        }
      }
    }
    return config.namespace_filter == NamespaceFilter::kMatch ? matched : !matched;
  }
};

KubernetesProvider::KubernetesProvider(KubernetesConfig config, nlohmann::json raw)
    : config_(std::move(config)), raw_(std::move(raw)) {}

KubernetesProvider::~KubernetesProvider() = default;

Status KubernetesProvider::Start(const DiscoveryEnvironment& env) {
  sink_ = env.sink;
  for (const KubernetesClusterConfig& cc : config_.clusters) {
    auto c = std::make_unique<Cluster>();
    c->config = cc;
    uint32_t groups = 0;
    for (const std::string& pattern : cc.namespace_regexes) {
      StatusOr<expr::Regex> re = expr::Regex::Compile(pattern, false);
      if (!re.ok()) return re.status();  // validated by the config already
      groups = std::max(groups, re.value().capture_count());
      c->namespace_regexes.push_back(std::move(re).value());
    }
    c->match_data = pcre2_match_data_create(groups + 1, nullptr);
    Cluster* cluster = c.get();
    KubeInformer::Callbacks cbs;
    cbs.on_list = [this, cluster](const std::vector<simdjson::dom::element>& items) {
      OnList(cluster, items);
    };
    cbs.on_event = [this, cluster](std::string_view type, simdjson::dom::element object) {
      OnEvent(cluster, type, object);
    };
    c->informer = std::make_unique<KubeInformer>(cc, std::move(cbs));
    clusters_.push_back(std::move(c));
  }
  for (auto& c : clusters_) c->informer->Start(env.loop);
  return Status::Ok();
}

void KubernetesProvider::Stop() {
  if (stopped_) return;
  stopped_ = true;
  for (auto& c : clusters_) c->informer->Stop();
  watched_.clear();
}

bool KubernetesProvider::ready() const {
  for (const auto& c : clusters_) {
    if (!c->informer->listed()) return false;
  }
  return true;
}

const KubeInformer& KubernetesProvider::informer(size_t cluster) const {
  return *clusters_.at(cluster)->informer;
}

size_t KubernetesProvider::objects(size_t cluster) const {
  return clusters_.at(cluster)->store.size();
}

KubernetesProvider::Target KubernetesProvider::Resolve(const ServiceRef& service) const {
  // APISIX's patterns: ^(.*):(.*)$ (namespace/name:port), and ^(.*)/(.*/.*):(.*)$ with an id
  // first; both split at the last ':', the id before the second-to-last '/'.
  Target t;
  const std::string& sn = service.service_name;
  size_t colon = sn.rfind(':');
  if (colon == std::string::npos) return t;
  std::string key = sn.substr(0, colon);
  t.port = sn.substr(colon + 1);
  Cluster* cluster = nullptr;
  if (!config_.multi) {
    cluster = clusters_.front().get();
  } else {
    size_t last = key.rfind('/');
    size_t split =
        last == std::string::npos || last == 0 ? std::string::npos : key.rfind('/', last - 1);
    if (split == std::string::npos) return t;
    std::string id = key.substr(0, split);
    key = key.substr(split + 1);
    for (const auto& c : clusters_) {
      if (c->config.id == id) cluster = c.get();
    }
    if (cluster == nullptr) return t;
  }
  t.cluster = cluster;
  t.key = std::move(key);
  return t;
}

void KubernetesProvider::Watch(const ServiceRef& service) {
  if (stopped_ || watched_.count(service) != 0) return;
  Target t = Resolve(service);
  watched_.emplace(service, t);
  if (t.cluster == nullptr) {
    spdlog::error("discovery kubernetes: service_name \"{}\" is not {}; no nodes",
                  service.service_name,
                  config_.multi ? "<id>/<namespace>/<name>:<port> with a configured id"
                                : "<namespace>/<name>:<port>");
    sink_->Publish(service, std::make_shared<const DiscoveredNodes>());
    return;
  }
  t.cluster->watchers[t.key].insert(service);
  Publish(service, t);
}

void KubernetesProvider::Unwatch(const ServiceRef& service) {
  auto it = watched_.find(service);
  if (it == watched_.end()) return;
  if (Cluster* c = it->second.cluster; c != nullptr) {
    auto w = c->watchers.find(it->second.key);
    if (w != c->watchers.end()) {
      w->second.erase(service);
      if (w->second.empty()) c->watchers.erase(w);
    }
  }
  watched_.erase(it);
}

void KubernetesProvider::Publish(const ServiceRef& ref, const Target& t) {
  if (!t.cluster->informer->listed()) return;        // nothing known yet: publish nothing
  std::vector<DiscoveredNodesConstSharedPtr> parts;  // each sorted (Apply)
  auto entry = t.cluster->store.find(t.key);
  if (entry != t.cluster->store.end()) {
    for (const auto& [part, ports] : entry->second) {
      auto p = ports.find(t.port);
      if (p != ports.end() && !p->second->empty()) parts.push_back(p->second);
    }
  }
  sink_->PublishParts(ref, std::move(parts));  // the Directory drops an equal list
}

void KubernetesProvider::PublishKey(Cluster* c, const std::string& key) {
  auto w = c->watchers.find(key);
  if (w == c->watchers.end()) return;
  for (const ServiceRef& ref : w->second) {
    auto it = watched_.find(ref);
    if (it != watched_.end()) Publish(ref, it->second);
  }
}

bool KubernetesProvider::Apply(Cluster* c, simdjson::dom::element object, bool deleted,
                               std::string* key) {
  std::string ns, part;
  KubePortNodes nodes;
  int weight = c->config.default_weight;
  bool ok = c->config.watch_endpoint_slices
                ? ReadEndpointSlice(object, weight, &ns, key, &part, &nodes)
                : ReadEndpoints(object, weight, &ns, key, &nodes);
  if (!ok) {
    spdlog::warn("discovery kubernetes: skipping an object without {}",
                 c->config.watch_endpoint_slices
                     ? "metadata.namespace, metadata.name or its kubernetes.io/service-name label"
                     : "metadata.namespace or metadata.name");
    return false;
  }
  if (!c->Selected(ns)) return false;
  if (deleted) {
    auto it = c->store.find(*key);
    if (it == c->store.end()) return false;
    auto p = it->second.find(part);
    if (p == it->second.end()) return false;  // not known: nothing changes
    it->second.erase(p);
    if (it->second.empty()) c->store.erase(it);
  } else {
    for (auto& [port, list] : nodes) SortNodes(&list);  // published as sorted parts
    SharedPortNodes& stored = c->store[*key][part];
    // An object sent again with the same nodes (a MODIFIED event for a label, a condition
    // other than ready, a resync) changes no service: nothing to merge or publish. A port
    // whose list is unchanged keeps its pointer.
    SharedPortNodes next;
    bool changed = stored.size() != nodes.size();
    for (auto& [port, list] : nodes) {
      auto old = stored.find(port);
      if (old != stored.end() && *old->second == list) {
        next.emplace(port, old->second);
      } else {
        next.emplace(port, std::make_shared<const DiscoveredNodes>(std::move(list)));
        changed = true;
      }
    }
    if (!changed) return false;
    stored = std::move(next);
  }
  return true;
}

void KubernetesProvider::OnList(Cluster* c, const std::vector<simdjson::dom::element>& items) {
  if (stopped_) return;
  c->store.clear();
  std::string key;
  for (simdjson::dom::element item : items) Apply(c, item, false, &key);
  for (const auto& [k, refs] : c->watchers) {
    for (const ServiceRef& ref : refs) {
      auto it = watched_.find(ref);
      if (it != watched_.end()) Publish(ref, it->second);
    }
  }
}

void KubernetesProvider::OnEvent(Cluster* c, std::string_view type,
                                 simdjson::dom::element object) {
  if (stopped_) return;
  std::string key;
  if (Apply(c, object, type == "DELETED", &key)) PublishKey(c, key);
}

nlohmann::json KubernetesProvider::Dump() const {
  nlohmann::json eps = nlohmann::json::array();
  for (const auto& c : clusters_) {
    nlohmann::json list = nlohmann::json::array();
    std::vector<std::string> keys;
    for (const auto& [k, parts] : c->store) keys.push_back(k);
    std::sort(keys.begin(), keys.end());
    for (const std::string& k : keys) {
      std::map<std::string, DiscoveredNodes> merged;  // as Publish() gives them
      for (const auto& [part, ports] : c->store.at(k)) {
        for (const auto& [port, nodes] : ports) {
          merged[port].insert(merged[port].end(), nodes->begin(), nodes->end());
        }
      }
      nlohmann::json value = nlohmann::json::object();
      for (auto& [port, nodes] : merged) {
        SortNodes(&nodes);
        nlohmann::json& arr = value[port] = nlohmann::json::array();
        for (const DiscoveredNode& n : nodes) {
          arr.push_back({{"host", n.host}, {"port", n.port}, {"weight", n.weight}});
        }
      }
      list.push_back({{"name", k}, {"value", value.dump()}});
    }
    nlohmann::json one = {{"endpoints", std::move(list)}};
    if (config_.multi) one["id"] = c->config.id;
    eps.push_back(std::move(one));
  }
  return {{"config", raw_}, {"endpoints", std::move(eps)}};
}

StatusOr<std::unique_ptr<DiscoveryProvider>> KubernetesProviderFactory::Create(
    const nlohmann::json& conf) const {
  StatusOr<KubernetesConfig> c = ParseKubernetesConfig(conf);
  if (!c.ok()) return c.status();
  return std::unique_ptr<DiscoveryProvider>(
      std::make_unique<KubernetesProvider>(std::move(c).value(), conf));
}

}  // namespace turnpike::discovery
