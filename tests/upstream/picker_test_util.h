// Node sets for balancer tests: node i is 10.0.<i/256>.<i%256>:80 with weights[i] and
// priorities[i] (0 when not given).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "upstream/node_set.h"

namespace turnpike::upstream::testing {

inline NodeSetConstSharedPtr Set(const std::vector<int>& weights,
                                 const std::vector<int>& priorities = {}) {
  auto set = std::make_shared<NodeSet>();
  for (size_t i = 0; i < weights.size(); ++i) {
    Node n;
    n.host = "10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256);
    n.ip_text = n.host;
    n.port = 80;
    n.weight = weights[i];
    n.priority = i < priorities.size() ? priorities[i] : 0;
    set->nodes.push_back(std::move(n));
  }
  return set;
}

}  // namespace turnpike::upstream::testing
