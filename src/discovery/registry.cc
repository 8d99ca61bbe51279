#include "discovery/registry.h"

namespace turnpike::discovery {

void ProviderRegistry::Add(std::unique_ptr<DiscoveryProviderFactory> factory) {
  factories_.push_back(std::move(factory));
}

const DiscoveryProviderFactory* ProviderRegistry::Find(std::string_view name) const {
  for (const auto& f : factories_) {
    if (f->name() == name) return f.get();
  }
  return nullptr;
}

}  // namespace turnpike::discovery
