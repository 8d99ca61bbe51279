// The plugins built into this binary: the one explicit list (no static registration).
#pragma once

#include <memory>

#include "proxy/plugin_registry.h"
#include "turnpike/log_file.h"

namespace turnpike::daemon {

// `log_files`: where file-logger writes (the daemon's one log writer, which the access log
// shares; a `turnpike check` passes a writer of its own, which opens nothing).
void RegisterBuiltinPlugins(proxy::PluginRegistry* registry, std::shared_ptr<LogFiles> log_files);

}  // namespace turnpike::daemon
