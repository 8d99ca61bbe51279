#include "proxy/plugin_registry.h"

#include <algorithm>

namespace turnpike::proxy {

void PluginRegistry::Register(std::unique_ptr<PluginFactory> factory) {
  factories_.push_back(std::move(factory));
}

const PluginFactory* PluginRegistry::Find(std::string_view name) const {
  for (const auto& f : factories_) {
    if (f->name() == name) return f.get();
  }
  return nullptr;
}

std::vector<std::string> PluginRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& f : factories_) names.emplace_back(f->name());
  return names;
}

std::vector<const PluginFactory*> PluginRegistry::Factories() const {
  std::vector<const PluginFactory*> out;
  for (const auto& f : factories_) out.push_back(f.get());
  return out;
}

void PluginChain::Sort() {
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.priority > b.priority; });
  phases = 0;
  for (const Entry& e : entries) phases |= e.plugin->phases();
}

}  // namespace turnpike::proxy
