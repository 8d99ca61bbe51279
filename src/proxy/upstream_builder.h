// UpstreamBuilder: the upstream part of BuildSnapshot (internal to proxy/).
//
// Turns an UpstreamSpec into an Upstream: effective settings, and its node-set slot. Nodes
// that are all IP literals become a node set right here (nothing to wait for); domain names
// and discovery upstreams get an empty slot and a discovery::NodeSource for the control
// thread. A slot is carried over from `previous` when the upstream keeps its key and its
// nodes (same IP-literal set by value, or an equal source), so workers keep their pickers and
// a resolved or discovered set survives the reload. Never blocks (no DNS).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "config/specs.h"
#include "proxy/snapshot.h"

namespace turnpike::proxy {

class UpstreamBuilder {
 public:
  UpstreamBuilder(const config::GatewayConfig& gateway, const Snapshot* previous, Snapshot* out,
                  std::vector<std::string>* warnings, BuildStats* stats);

  // `warnings`: none today; node problems (names that do not resolve) are reported by the
  // Directory when it resolves them.
  // Adds the upstream to `out` (its slot is the next Upstream::slot) and returns it.
  const Upstream* Add(const config::UpstreamSpec& spec, std::string key);

 private:
  const config::GatewayConfig& gateway_;
  Snapshot* out_;
  BuildStats* stats_;
  std::unordered_map<std::string, const Upstream*> previous_;
};

}  // namespace turnpike::proxy
