// Validators for fields that several apisix.yaml objects share (ids, hosts, timeouts,
// metadata). Rules follow APISIX's schema_def (reference §1.2, §2.1, §3.1).
//
// Internal to config/. Control thread only.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "config/specs.h"
#include "config/yaml_util.h"

namespace turnpike::config {

// An object id: a string matching ^[a-zA-Z0-9-_.]+$ with 1-64 characters, or an integer
// >= 1. Returns the id normalized to a string (`1` -> "1").
std::optional<std::string> ReadId(const Field& f, Diagnostics& d);

// APISIX host_def: `*`, or an optional leading `*` followed by [0-9a-zA-Z-._[]:]+.
bool IsValidHost(std::string_view host);
// A string that passes IsValidHost (returned as written).
std::optional<std::string> ReadHost(const Field& f, Diagnostics& d);

// `{connect, send, read}`: numbers > 0 (seconds), all three required. Other keys are
// ignored with a warning (the APISIX schema allows them).
std::optional<Timeout> ReadTimeout(const Field& f, Diagnostics& d);

// Metadata common to routes and upstreams: name (1-256 chars), desc (<= 256), labels (map
// of non-empty strings <= 256 chars), create_time / update_time (integers). Returns false
// when `f.key` is none of these; otherwise validates the value (errors go to `d`).
bool CheckMetadataField(const Field& f, Diagnostics& d, std::string* name);

// Records a "not supported yet, ignored" warning for `f`.
void WarnNotSupported(const Field& f, Diagnostics& d);

}  // namespace turnpike::config
