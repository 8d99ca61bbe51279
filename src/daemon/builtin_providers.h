// The discovery providers built into the daemon, registered explicitly (no static
// initialisers), as the built-in plugins are.
#pragma once

#include "discovery/registry.h"

namespace turnpike::daemon {

void RegisterBuiltinProviders(discovery::ProviderRegistry* registry);

}  // namespace turnpike::daemon
