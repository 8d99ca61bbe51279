#include "proxy/upstream_builder.h"

#include <algorithm>
#include <memory>

#include "upstream/chash.h"

namespace turnpike::proxy {
namespace {

// The configured nodes as a discovery list (the static source).
DiscoveredNodes StaticNodes(const config::UpstreamSpec& spec) {
  DiscoveredNodes nodes;
  nodes.reserve(spec.nodes.size());
  for (const config::NodeSpec& n : spec.nodes) {
    nodes.push_back(DiscoveredNode{n.host, n.port, n.weight, n.priority});
  }
  return nodes;
}

// The node set of `nodes` when every host is an IP literal; null otherwise.
std::shared_ptr<upstream::NodeSet> LiteralNodeSet(const DiscoveredNodes& nodes) {
  auto set = std::make_shared<upstream::NodeSet>();
  set->nodes.reserve(nodes.size());
  for (const DiscoveredNode& n : nodes) {
    upstream::Node node;
    auto port = static_cast<uint16_t>(n.port == 0 ? discovery::kDefaultPort : n.port);
    if (!discovery::ParseIpLiteral(n.host, port, &node)) return nullptr;
    discovery::FinishNode(n, &node);
    set->nodes.push_back(std::move(node));
  }
  return set;
}

// The config validated `type` (config/upstream_spec.cc).
upstream::BalancerType BalancerOf(const std::string& type) {
  if (type == "chash") return upstream::BalancerType::kChash;
  if (type == "least_conn") return upstream::BalancerType::kLeastConn;
  if (type == "ewma") return upstream::BalancerType::kEwma;
  return upstream::BalancerType::kRoundRobin;
}

}  // namespace

UpstreamBuilder::UpstreamBuilder(const config::GatewayConfig& gateway, const Snapshot* previous,
                                 Snapshot* out, std::vector<std::string>* /*warnings*/,
                                 BuildStats* stats)
    : gateway_(gateway), out_(out), stats_(stats) {
  if (previous != nullptr) {
    for (const auto& u : previous->upstreams) previous_[u->key] = u.get();
  }
}

const Upstream* UpstreamBuilder::Add(const config::UpstreamSpec& spec, std::string key) {
  auto u = std::make_unique<Upstream>();
  u->key = std::move(key);
  auto prev_it = previous_.find(u->key);
  const Upstream* prev = prev_it == previous_.end() ? nullptr : prev_it->second;

  // A chash upstream's slot carries sets with their rings (upstream/node_set_slot.h); a slot
  // is kept only for an upstream that still agrees on that.
  const upstream::BalancerType balancer = BalancerOf(spec.type);
  const bool chash = balancer == upstream::BalancerType::kChash;
  const bool prev_fits = prev != nullptr && prev->nodes->chash() == chash;
  std::shared_ptr<upstream::NodeSet> literal;
  std::shared_ptr<discovery::NodeSource> source;
  if (!spec.discovery_type.empty() && spec.nodes.empty()) {
    source = std::make_shared<discovery::NodeSource>();
    source->provider = spec.discovery_type;
    source->service = ServiceRef{spec.service_name, spec.discovery_args};
  } else {
    DiscoveredNodes nodes = StaticNodes(spec);
    literal = LiteralNodeSet(nodes);
    if (literal == nullptr) {
      source = std::make_shared<discovery::NodeSource>();
      source->nodes = std::move(nodes);
    }
  }
  if (literal != nullptr) {
    if (prev_fits && prev->source == nullptr &&
        upstream::SameNodes(*prev->nodes->Load(), *literal)) {
      u->nodes = prev->nodes;  // same content: keep the slot (and rings), workers their pickers
      ++stats_->reused_node_sets;
    } else {
      // The reload job's thread summarizes the set and builds the rings; the workers share
      // them.
      literal->summary = upstream::SummarizeNodes(literal->nodes);
      if (chash && !literal->nodes.empty()) {
        literal->chash = upstream::ChashRings::Build(literal->nodes);
      }
      u->nodes = std::make_shared<upstream::NodeSetSlot>(std::move(literal), chash);
    }
  } else {
    if (prev_fits && prev->source != nullptr && *prev->source == *source) {
      u->nodes = prev->nodes;  // same source: keep what was resolved or discovered
      u->source = prev->source;
      ++stats_->reused_node_sets;
    } else {
      // Filled by the Directory (rings included) before the snapshot is published.
      u->nodes = std::make_shared<upstream::NodeSetSlot>(nullptr, chash);
      u->source = std::move(source);
    }
    ++stats_->pending_node_sets;
  }

  u->balancer = balancer;
  if (u->balancer == upstream::BalancerType::kChash) {
    u->hash_key = upstream::HashKey::Compile(
        upstream::ParseHashOn(spec.hash_on).value_or(upstream::HashOn::kVars), spec.key);
  }
  if (spec.timeout) u->timeout = *spec.timeout;
  if (spec.retries) u->retries = *spec.retries;
  u->retry_timeout = spec.retry_timeout;
  u->pass_host = spec.pass_host;
  u->upstream_host = spec.upstream_host;
  u->keepalive = spec.keepalive_pool ? *spec.keepalive_pool : gateway_.upstream_keepalive;
  if (spec.checks && !gateway_.disable_upstream_healthcheck) {
    if (prev != nullptr && prev->checks != nullptr && *prev->checks == *spec.checks) {
      // Same checks: the checker, its targets' health and the first-use flag carry over.
      u->checks = prev->checks;
      u->health = prev->health;
    } else {
      u->checks = std::make_shared<const config::HealthChecksSpec>(*spec.checks);
      u->health = std::make_shared<upstream::HealthSlot>(
          spec.checks->passive ? std::max(1, gateway_.worker_processes) : 0);
    }
  }
  u->slot = static_cast<uint32_t>(out_->upstreams.size());
  stats_->nodes += spec.nodes.size();
  out_->upstreams.push_back(std::move(u));
  return out_->upstreams.back().get();
}

std::vector<discovery::Binding> NodeBindings(const Snapshot& snapshot) {
  std::vector<discovery::Binding> bindings;
  for (const auto& u : snapshot.upstreams) {
    if (u->source != nullptr) bindings.push_back({u->key, u->source, u->nodes});
  }
  return bindings;
}

}  // namespace turnpike::proxy
