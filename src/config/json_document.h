// Loading apisix.json (APISIX `config_provider: json`) into the same YAML node tree the YAML
// loader produces, so that every item parser works on both. JSON is YAML, and yaml-cpp's
// nodes carry the line and column of each value in the JSON text.
//
// Internal to config/. Control thread only. No yaml-cpp or JSON exception escapes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "config/env_subst.h"
#include "config/yaml_util.h"

namespace turnpike::config {

// Parses `text` as strict JSON (RFC 8259; anything only YAML accepts is an error reported as
// `invalid JSON: ...` at its line and column). The top level must be an object. Then, as
// APISIX does for apisix.json, `${{VAR}}` / `${{VAR:=default}}` references are substituted
// inside string values and keys after parsing; a string value that contained a reference
// and now reads as a number (Lua tonumber) or as true / false takes that type, and keys stay
// strings. On failure returns nullopt after recording file-level errors in `d`.
std::optional<YamlDocument> LoadJsonDocument(std::string_view text, Diagnostics& d,
                                           const EnvLookup& lookup = ProcessEnv());

}  // namespace turnpike::config
