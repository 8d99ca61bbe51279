#include "proxy/snapshot.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <cstring>
#include <unordered_map>

#include "base/http_method.h"

namespace turnpike::proxy {
namespace {

// Fills node->addr from an IP literal or, failing that, a DNS lookup (first address).
bool Resolve(upstream::Node* node, std::string* error) {
  auto* v4 = reinterpret_cast<sockaddr_in*>(&node->addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&node->addr);
  if (inet_pton(AF_INET, node->host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(node->port);
    node->addr_len = sizeof(sockaddr_in);
    return true;
  }
  if (inet_pton(AF_INET6, node->host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(node->port);
    node->addr_len = sizeof(sockaddr_in6);
    return true;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(node->host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr) {
    *error = gai_strerror(rc);
    return false;
  }
  std::memcpy(&node->addr, res->ai_addr, res->ai_addrlen);
  node->addr_len = res->ai_addrlen;
  if (res->ai_family == AF_INET) v4->sin_port = htons(node->port);
  if (res->ai_family == AF_INET6) v6->sin6_port = htons(node->port);
  freeaddrinfo(res);
  return true;
}

upstream::NodeSetConstSharedPtr MakeNodeSet(const config::UpstreamSpec& spec,
                                            std::vector<std::string>* warnings) {
  auto set = std::make_shared<upstream::NodeSet>();
  for (const config::NodeSpec& n : spec.nodes) {
    upstream::Node node;
    node.host = n.host;
    node.port = static_cast<uint16_t>(n.port);
    node.weight = n.weight;
    node.priority = n.priority;
    std::string error;
    if (!Resolve(&node, &error)) {
      warnings->push_back(spec.loc.file + ":" + std::to_string(spec.loc.line) +
                          ": node " + n.host + ": cannot resolve (" + error + "), node skipped");
      continue;
    }
    bool v6 = node.host.find(':') != std::string::npos;
    node.host_header = v6 ? "[" + node.host + "]" : node.host;
    if (node.port != 80) node.host_header += ":" + std::to_string(node.port);
    set->nodes.push_back(std::move(node));
  }
  return set;
}

class UpstreamBuilder {
 public:
  UpstreamBuilder(const config::GatewayConfig& gateway, const Snapshot* previous,
                  Snapshot* out, std::vector<std::string>* warnings, BuildStats* stats)
      : gateway_(gateway), out_(out), warnings_(warnings), stats_(stats) {
    if (previous != nullptr) {
      for (const auto& u : previous->upstreams) previous_[u->key] = u.get();
    }
  }

  const Upstream* Add(const config::UpstreamSpec& spec, std::string key) {
    auto u = std::make_unique<Upstream>();
    u->key = std::move(key);
    u->nodes = MakeNodeSet(spec, warnings_);
    auto prev = previous_.find(u->key);
    if (prev != previous_.end() && upstream::SameNodes(*prev->second->nodes, *u->nodes)) {
      u->nodes = prev->second->nodes;  // same content: keep the pointer, workers keep state
      ++stats_->reused_node_sets;
    }
    if (spec.timeout) u->timeout = *spec.timeout;
    u->retries = spec.retries ? *spec.retries
                              : std::max<int>(0, static_cast<int>(u->nodes->nodes.size()) - 1);
    u->retry_timeout = spec.retry_timeout;
    u->pass_host = spec.pass_host;
    u->upstream_host = spec.upstream_host;
    u->keepalive = spec.keepalive_pool ? *spec.keepalive_pool : gateway_.upstream_keepalive;
    u->slot = static_cast<uint32_t>(out_->upstreams.size());
    stats_->nodes += u->nodes->nodes.size();
    out_->upstreams.push_back(std::move(u));
    return out_->upstreams.back().get();
  }

 private:
  const config::GatewayConfig& gateway_;
  Snapshot* out_;
  std::vector<std::string>* warnings_;
  BuildStats* stats_;
  std::unordered_map<std::string, const Upstream*> previous_;
};

}  // namespace

SnapshotConstSharedPtr BuildSnapshot(const config::GatewayConfig& gateway,
                                     const config::RoutesConfig& routes,
                                     const Snapshot* previous, uint64_t version,
                                     std::vector<std::string>* warnings, BuildStats* stats) {
  BuildStats local_stats;
  if (stats == nullptr) stats = &local_stats;
  auto snap = std::make_shared<Snapshot>();
  snap->version = version;
  UpstreamBuilder builder(gateway, previous, snap.get(), warnings, stats);

  std::unordered_map<std::string, const Upstream*> by_id;
  for (const config::UpstreamSpec& spec : routes.upstreams) {
    by_id[spec.id] = builder.Add(spec, "upstreams/" + spec.id);
  }

  std::vector<router::RouteKey> keys;
  keys.reserve(routes.routes.size());
  for (const config::RouteSpec& spec : routes.routes) {
    if (spec.status == 0) continue;  // disabled routes are not matched at all
    Route route;
    route.id = spec.id;
    if (spec.timeout) {
      route.has_timeout = true;
      route.timeout = *spec.timeout;
    }
    if (!spec.upstream_id.empty()) {
      auto it = by_id.find(spec.upstream_id);
      if (it != by_id.end()) {
        route.upstream = it->second;
      } else {
        route.fail_status = 502;
        warnings->push_back(spec.loc.file + ":" + std::to_string(spec.loc.line) + ": route " +
                            spec.id + ": upstream_id " + spec.upstream_id +
                            " not found; requests get 502");
      }
    } else if (spec.upstream) {
      route.upstream = builder.Add(*spec.upstream, "routes/" + spec.id);
    } else {
      route.fail_status = 503;
    }
    router::RouteKey key;
    key.uris = spec.uris;
    key.hosts = spec.hosts;
    key.priority = spec.priority;
    if (!spec.methods.empty()) {
      key.methods = 0;
      for (const std::string& m : spec.methods) {
        if (auto parsed = base::ParseRouteMethod(m)) key.methods |= base::MaskOf(*parsed);
      }
    }
    key.payload = static_cast<uint32_t>(snap->routes.size());
    snap->routes.push_back(std::move(route));
    keys.push_back(std::move(key));
  }
  snap->table = router::RouteTable::Build(std::move(keys));
  stats->routes = snap->routes.size();
  stats->upstreams = snap->upstreams.size();
  return snap;
}

}  // namespace turnpike::proxy
