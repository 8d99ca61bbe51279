#include "proxy/plugin_registry.h"

#include <algorithm>

namespace turnpike::proxy {

void PluginChain::Sort() {
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.priority > b.priority; });
  phases = 0;
  for (Entry& e : entries) {
    e.phases = e.plugin->phases();
    phases |= e.phases;
  }
}

}  // namespace turnpike::proxy
