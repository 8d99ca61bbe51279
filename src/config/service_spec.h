// Validation of APISIX service objects (schema_def.service) into ServiceSpec.
//
// Internal to config/. Control thread only.
#pragma once

#include <optional>

#include "config/specs.h"
#include "config/yaml_util.h"

namespace turnpike::config {

// Validates one `services` item: id, name, desc, labels, create_time, update_time, hosts
// (lowercased, unique, at least one), upstream (inline, validated like a route's),
// upstream_id, plugins, enable_websocket; `script` loads with a "not supported yet" warning.
// No field is required. Any other field is an error. Returns nullopt when the item must be
// skipped; `id` is left "" when absent (the caller assigns arr_<n>).
std::optional<ServiceSpec> ParseService(const Field& f, Diagnostics& d);

}  // namespace turnpike::config
