// Loading config.yaml and apisix.yaml into the typed structs of specs.h.
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
  // nullopt when the file as a whole is unusable (unreadable, not YAML, missing `#END`);
  // the caller then keeps its previous configuration.
  std::optional<T> value;
  std::vector<ConfigError> errors;    // each bad item is skipped and reported here
  std::vector<ConfigError> warnings;  // unknown keys, ignored features
};

// Parses config.yaml text. `file` names the source in messages; `config_dir` is the directory
// used to resolve the routes file (default `<config_dir>/apisix.yaml`, or
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

// Parses apisix.yaml text (standalone file provider). Requires the `#END` marker in the last
// 10 bytes (APISIX semantics). Invalid items are skipped with an error; the rest apply.
LoadResult<RoutesConfig> ParseRoutesConfig(std::string_view text, const std::string& file);
LoadResult<RoutesConfig> LoadRoutesConfig(const std::string& path);

}  // namespace turnpike::config
