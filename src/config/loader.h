// Loading config.yaml and apisix.yaml / apisix.json into the typed structs of specs.h.
//
// Control thread only (reads files). Never throws: yaml-cpp exceptions stop here.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/specs.h"

namespace turnpike::config {

template <typename T>
struct LoadResult {
  // nullopt when the file as a whole is unusable (unreadable, not YAML / JSON, missing
  // `#END` in YAML, a top-level collection of the routes file that is not a list); the caller
  // then keeps its previous configuration.
  std::optional<T> value;
  std::vector<ConfigError> errors;    // each bad item is skipped and reported here
  std::vector<ConfigError> warnings;  // unknown keys, ignored features
};

// Parses config.yaml text. `file` names the source in messages; `config_dir` is the directory
// used to resolve the routes file (default `<config_dir>/apisix.yaml`, or
// `<config_dir>/apisix.json` with `deployment.role_data_plane.config_provider: json`, or
// `turnpike.routes_file` when set; relative paths resolve against config_dir).
// `hardware_threads` resolves `worker_processes: auto` (values < 1 count as 1).
// `${{VAR}}` references are substituted from the process environment before parsing, and
// APISIX_WORKER_PROCESSES overrides worker_processes. Any error rejects the whole file
// (value == nullopt); unknown keys only produce warnings.
LoadResult<GatewayConfig> ParseGatewayConfig(std::string_view text, const std::string& file,
                                             const std::string& config_dir,
                                             int hardware_threads);
// Reads `path` and parses it with config_dir = the directory of `path` ("." when none).
LoadResult<GatewayConfig> LoadGatewayConfig(const std::string& path, int hardware_threads);

// How the routes file is read (defaults: as `turnpike check` and tests need it).
struct RoutesParseOptions {
  // Keep each route, service and upstream item as written (`source`: compact JSON text) for
  // the control API's view. Costs about a tenth of the parse.
  bool keep_source = false;
};

// Parses apisix.yaml text (standalone file provider). Requires the `#END` marker in the last
// 10 bytes (APISIX semantics). Every top-level collection (`routes`, `upstreams`, ...,
// `plugins`, and those not loaded yet such as `consumers`) must be a list: null and `{}`
// count as empty, any other value rejects the whole file. Invalid items are skipped with an
// error; the rest apply.
// `${{VAR}}` references are substituted in the raw text before parsing, so YAML quoting
// decides the type of the substituted value.
LoadResult<RoutesConfig> ParseRoutesConfig(std::string_view text, const std::string& file,
                                           const RoutesParseOptions& options = {});

// Parses apisix.json text (`config_provider: json`): strict JSON whose top level is an
// object, with the same collections, item rules and messages as apisix.yaml (positions are
// the JSON text's lines and columns). No `#END` marker. As in APISIX, `${{VAR}}` references
// are substituted after parsing, inside string values and keys; a string value that
// contained a reference and now reads as a number, `true` or `false` takes that type.
LoadResult<RoutesConfig> ParseRoutesConfigJson(std::string_view text, const std::string& file,
                                               const RoutesParseOptions& options = {});

// True when `path` ends in `.json` (any case): such routes files are parsed as JSON.
bool IsJsonRoutesFile(const std::string& path);
// ParseRoutesConfigJson for a `.json` path, ParseRoutesConfig otherwise (for callers that
// read the file themselves, e.g. to hash its content before parsing).
LoadResult<RoutesConfig> ParseRoutesConfigForPath(std::string_view text, const std::string& path,
                                                  const RoutesParseOptions& options = {});
// Reads `path` and parses it by its extension, as ParseRoutesConfigForPath.
LoadResult<RoutesConfig> LoadRoutesConfig(const std::string& path);

}  // namespace turnpike::config
