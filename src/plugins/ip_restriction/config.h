// ip-restriction: configuration part. APISIX's `ip-restriction` plugin (priority 3000,
// access phase): lets through only the clients of a whitelist, or all but those of a
// blacklist.
//
//   ip-restriction: {whitelist: [10.0.0.0/8, "2001:db8::/32", 127.0.0.1],
//                    message: "...", response_code: 403}
//
// Exactly one of whitelist / blacklist (non-empty arrays of IPv4/IPv6 addresses and CIDRs,
// each checked at load); message 1..1024 characters (default "Your IP address is not
// allowed"); response_code 403 or 404 (default 403).
#pragma once

#include <string>

#include "turnpike/ip_matcher.h"
#include "turnpike/plugin.h"

namespace turnpike::plugins::ip_restriction {

struct Config {
  IpMatcher matcher;
  bool whitelist = false;  // else the matcher holds the blacklist
  std::string message = "Your IP address is not allowed";
  int response_code = 403;
};

// Control thread. Validates like APISIX's schema and check_schema.
StatusOr<Config> ParseConfig(const nlohmann::json& conf);

// The reply body for `message`, as APISIX's core.response.exit(code, {message = ...}) writes
// it with lua-cjson: `{"message":"..."}` and a newline ('/' escaped as cjson does).
std::string ReplyBody(std::string_view message);

}  // namespace turnpike::plugins::ip_restriction
