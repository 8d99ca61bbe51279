// The plugins built into this binary: the one explicit list (no static registration).
#pragma once

#include "proxy/plugin_registry.h"

namespace turnpike::daemon {

void RegisterBuiltinPlugins(proxy::PluginRegistry* registry);

}  // namespace turnpike::daemon
