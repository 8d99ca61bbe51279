// `turnpike check`: what a reload would do with the routes file, without serving. Loads and
// validates it, then builds a snapshot (every plugin instance's Create runs, references are
// resolved) to report every problem. Never starts plugin services (daemon/services.h).
#pragma once

#include <cstddef>
#include <cstdio>

#include "config/specs.h"
#include "proxy/plugin_registry.h"

namespace turnpike::daemon {

struct CheckResult {
  int problems = 0;     // errors printed (warnings are not problems)
  bool loaded = false;  // the routes file was read and parsed (maybe with item errors)
  size_t routes = 0;    // items loaded
  size_t upstreams = 0;
};

// Control thread. Prints errors and warnings (one per line) to `err`.
CheckResult CheckRoutes(const config::GatewayConfig& gateway, const proxy::PluginRegistry& registry,
                        std::FILE* err);

}  // namespace turnpike::daemon
