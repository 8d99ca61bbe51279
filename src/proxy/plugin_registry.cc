#include "proxy/plugin_registry.h"

#include <algorithm>

namespace turnpike::proxy {

void PluginChain::Sort() {
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.priority > b.priority; });
  phases = 0;
  for (const Entry& e : entries) phases |= e.plugin->phases();
}

}  // namespace turnpike::proxy
