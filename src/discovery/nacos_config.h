// The config part of the `nacos` discovery provider (reference §5.3): config.yaml's
// `discovery.nacos`, validated as APISIX's schema (apisix/discovery/nacos/schema.lua, the object
// form; additionalProperties false).
//
//   discovery:
//     nacos:
//       host:                                    # required, 1+ entries, tried from a random one
//         - "http://nacos:nacos@127.0.0.1:8848"  # http://[user:pass@]host[:port]
//       prefix: /nacos/v1/                       # the default
//       fetch_interval: 30                       # seconds between two polls (integer >= 1)
//       weight: 100                              # node weight when an instance has none (>= 1)
//       timeout: {connect: 2000, send: 2000, read: 5000}   # milliseconds (integers >= 1)
//       access_key: ""                           # both set: each list request is signed
//       secret_key: ""
//
// Rules beyond the schema: an `https://` host is refused (Turnpike has no TLS client yet); a host's
// port must be 1..65535 (80 when absent); `user:pass@` is split at the first ':' (APISIX splits on
// every ':' and drops the credentials when the password has one). The array form (several
// registries with `id`) is not supported: an error says so.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "turnpike/status.h"

namespace turnpike::discovery {

struct NacosHost {
  std::string url;   // as configured, credentials removed: for logs
  std::string host;  // IP literal or domain name
  int port = 80;
  std::string username;  // both non-empty: log in before listing
  std::string password;
  bool has_credentials() const { return !username.empty() && !password.empty(); }
};

struct NacosProviderConfig {
  std::vector<NacosHost> hosts;
  std::string prefix = "/nacos/v1/";  // always ends with '/'
  uint64_t fetch_interval_ms = 30000;
  int weight = 100;
  double connect_timeout = 2;  // seconds
  double send_timeout = 2;
  double read_timeout = 5;
  std::string access_key;
  std::string secret_key;
};

// Validates `discovery.nacos`. Errors name the field, e.g. `host[1]: "ftp://x" is not
// http(s)://[user:pass@]host[:port]`.
StatusOr<NacosProviderConfig> ParseNacosProviderConfig(const nlohmann::json& conf);

}  // namespace turnpike::discovery
