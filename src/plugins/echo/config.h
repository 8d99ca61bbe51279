// echo: configuration part. APISIX's `echo` plugin (priority 412): replaces, prefixes or
// suffixes the response body and sets response headers.
//
//   echo: {before_body: "...", body: "...", after_body: "...", headers: {X-A: "1"}}
//
// At least one of before_body, body, after_body is required; header values are strings or
// numbers.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "turnpike/plugin.h"

namespace turnpike::plugins::echo {

struct Config {
  std::optional<std::string> before_body;
  std::optional<std::string> body;
  std::optional<std::string> after_body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// Control thread. Validates like APISIX's schema.
StatusOr<Config> ParseConfig(const nlohmann::json& conf);

}  // namespace turnpike::plugins::echo
