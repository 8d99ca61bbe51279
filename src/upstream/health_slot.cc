#include "upstream/health_slot.h"

#include <algorithm>

#include "upstream/balancer.h"

namespace turnpike::upstream {

bool HealthSnapshot::IsDown(const Node& node) const {
  if (down.empty()) return false;
  auto it = std::lower_bound(down.begin(), down.end(), node, [](const Addr& a, const Node& n) {
    const int c = a.ip.compare(n.ip_text);
    return c < 0 || (c == 0 && a.port < n.port);
  });
  return it != down.end() && it->ip == node.ip_text && it->port == node.port;
}

HealthSlot::HealthSlot(int passive_workers) {
  for (int i = 0; i < passive_workers; ++i) rings_.push_back(std::make_unique<Ring>());
}

HealthSnapshotConstSharedPtr HealthSlot::Store(HealthSnapshotConstSharedPtr snapshot) {
  const HealthSnapshot* raw = snapshot.get();
  {
    std::lock_guard<std::mutex> lock(mu_);
    value_.swap(snapshot);
  }
  current_.store(raw, std::memory_order_release);
  return snapshot;
}

uint64_t HealthSlot::dropped() const {
  uint64_t n = 0;
  for (const auto& ring : rings_) n += ring->dropped.load(std::memory_order_relaxed);
  return n;
}

void MarkDown(const HealthSnapshot& health, const NodeSet& set, TriedSet* down) {
  down->Clear();
  if (health.down.empty()) return;
  for (uint32_t i = 0; i < set.nodes.size(); ++i) {
    if (health.IsDown(set.nodes[i])) down->Add(i);
  }
}

}  // namespace turnpike::upstream
