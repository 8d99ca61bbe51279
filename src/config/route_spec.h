// Validation of APISIX route objects (reference §2.1) into RouteSpec.
//
// Internal to config/. Control thread only.
#pragma once

#include <optional>

#include "config/specs.h"
#include "config/yaml_util.h"

namespace turnpike::config {

// Validates one `routes` item. Returns nullopt when the route must be skipped (every
// problem is recorded in `d`). Schema rules as APISIX: uri or uris (not both); host or hosts,
// remote_addr or remote_addrs (at most one of each, folded into the list); one of plugins,
// upstream, upstream_id, service_id or script; script not with plugins or plugin_config_id;
// vars must be a list (compiled later, with the snapshot); plugins as ReadPlugins.
// filter_func, script and script_id load with a "not supported yet, ignored" warning. `id`
// is normalized but left "" when absent (the caller assigns arr_<n>). References
// (upstream_id, service_id, plugin_config_id) are not resolved here.
std::optional<RouteSpec> ParseRoute(const Field& f, Diagnostics& d);

}  // namespace turnpike::config
