// Validation of APISIX route objects (reference §2.1) into RouteSpec.
//
// Internal to config/. Control thread only.
#pragma once

#include <optional>

#include "config/specs.h"
#include "config/yaml_util.h"

namespace turnpike::config {

// Validates one `routes` item. Returns nullopt when the route must be skipped (every
// problem is recorded in `d`). Fields the schema accepts but this version does not implement
// load with a "not supported yet, ignored" warning. `id` is normalized but left "" when
// absent (the caller assigns arr_<n>). References (upstream_id, ...) are not resolved.
std::optional<RouteSpec> ParseRoute(const Field& f, Diagnostics& d);

}  // namespace turnpike::config
