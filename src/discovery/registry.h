// ProviderRegistry: the discovery providers the daemon knows, by name (`discovery_type`).
//
// Filled explicitly by src/daemon (RegisterBuiltinProviders), never by static initialisers;
// read-only afterwards. Control thread.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "turnpike/discovery.h"

namespace turnpike::discovery {

class ProviderRegistry {
 public:
  // REQUIRES: no factory of the same name() was added.
  void Add(std::unique_ptr<DiscoveryProviderFactory> factory);
  // nullptr when unknown.
  const DiscoveryProviderFactory* Find(std::string_view name) const;
  const std::vector<std::unique_ptr<DiscoveryProviderFactory>>& factories() const {
    return factories_;
  }

 private:
  std::vector<std::unique_ptr<DiscoveryProviderFactory>> factories_;
};

}  // namespace turnpike::discovery
