// ProviderRegistry: the discovery providers the daemon knows, by name (`discovery_type`).
//
// Filled explicitly by src/daemon (RegisterBuiltinProviders), never by static initialisers;
// read-only afterwards. Control thread.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "base/named_registry.h"
#include "turnpike/discovery.h"

namespace turnpike::discovery {

using ProviderRegistry = base::NamedRegistry<DiscoveryProviderFactory>;

}  // namespace turnpike::discovery
