// Validation of APISIX upstream objects (reference §3.1) into UpstreamSpec.
//
// Internal to config/. Control thread only.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "config/specs.h"
#include "config/yaml_util.h"

namespace turnpike::config {

// Validates one upstream object: a top-level `upstreams` item or a route's inline
// `upstream`. Returns nullopt when the object must be skipped (every problem is recorded in
// `d`); warnings cover features accepted by the schema but not implemented. `id` is
// validated and normalized but left "" when absent; `loc` is the object's position.
std::optional<UpstreamSpec> ParseUpstream(const Field& f, Diagnostics& d);

// Validates an upstream's `checks` (reference §3.4) with APISIX's schema and defaults
// (checks_spec.cc). Returns nullopt when it has errors (recorded in `d`).
std::optional<HealthChecksSpec> ParseHealthChecks(const Field& f, Diagnostics& d);

// Splits a map-form node key: "host", "host:port", "[v6]", "[v6]:port", or a bare IPv6
// literal (more than one colon, no brackets). Brackets are removed from the host; a missing
// port yields `default_port`. Returns false when the address or port is malformed.
bool SplitHostPort(std::string_view addr, int default_port, std::string* host, int* port);

}  // namespace turnpike::config
