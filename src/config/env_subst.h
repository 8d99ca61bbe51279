// Environment substitution on raw config text (APISIX `${{VAR}}` / `${{VAR:=default}}`).
//
// Internal to config/. Control thread only.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/specs.h"

namespace turnpike::config {

// Returns the value of an environment variable, or nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// Looks variables up in the process environment (getenv).
EnvLookup ProcessEnv();

// Replaces every `${{NAME}}` and `${{NAME:=default}}` in `text` (whitespace allowed inside
// the braces; NAME is [A-Za-z0-9_]+; default is trimmed). A set-but-empty variable wins over
// the default. The replacement is inserted verbatim before YAML parsing, so quoting in the
// file decides the value's type. A reference must close on its own line; `${{` without a
// closing `}}` is left as is. Lines whose first non-blank character is `#` (full-line
// comments) are copied unchanged, so commented-out references never fail.
//
// Returns nullopt when a variable is missing and has no default, or a reference is malformed;
// one error per problem (1-based line and column of the `${{`) is appended to `errors`.
// Columns reported later by the YAML parser refer to the substituted text.
std::optional<std::string> SubstituteEnv(std::string_view text, const std::string& file,
                                         const EnvLookup& lookup, std::vector<ConfigError>* errors);

// Substitutes the references inside one already-decoded string value, the way APISIX treats
// apisix.json (JSON has explicit types, so substitution happens after parsing). Same syntax
// as SubstituteEnv, but the whole value is one "line" and there is no comment rule. `loc` is
// where the value's text starts (errors are reported at loc.col + the reference's offset).
// Sets *used when at least one reference was replaced. Returns nullopt on error.
std::optional<std::string> SubstituteEnvInValue(std::string_view value, const SourceLoc& loc,
                                                const EnvLookup& lookup,
                                                std::vector<ConfigError>* errors, bool* used);

}  // namespace turnpike::config
