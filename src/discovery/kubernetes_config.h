// The config part of the `kubernetes` discovery provider (reference §5.5): config.yaml's
// `discovery.kubernetes`, validated as APISIX's kubernetes/schema.lua and get_apiserver() do.
//
// One cluster (an object) or several (a list of objects, each with an `id`):
//
//   discovery:
//     kubernetes:
//       service:
//         schema: http                        # https: not supported yet (no TLS client)
//         host: ${KUBERNETES_SERVICE_HOST}    # the default; a name or IPv4, or ${ENV}
//         port: ${KUBERNETES_SERVICE_PORT}    # the default; "1".."65535" or ${ENV}
//       client:
//         token: ${KUBERNETES_CLIENT_TOKEN}   # or token_file: /path (default: the pod's
//                                             # service-account token); either may be ${ENV}
//       namespace_selector:                   # at most one of:
//         equal: default                      #   fieldSelector metadata.namespace=default
//         # not_equal: kube-system            #   fieldSelector metadata.namespace!=...
//         # match: [default, "^my-[a-z]+$"]   #   regexes, the first match must be the whole
//         # not_match: [...]                  #   namespace (ngx.re.match "jo"), client side
//       label_selector: app=web,tier!=db      # passed to the API server as labelSelector
//       default_weight: 50                    # every discovered node's weight (>= 0)
//       watch_endpoint_slices: false          # true: EndpointSlices instead of Endpoints
//       shared_size: 64m                      # accepted for APISIX compatibility, unused
//
// In the list form every item needs `id` (^[a-z0-9]{1,64}$, unique), `service.host`,
// `service.port` and exactly one of `client.token` / `client.token_file`; no defaults are
// filled in (as APISIX). `${NAME}` is read from the environment when the config is parsed
// (an unset variable is an error naming the field); a token file is read again before each
// list and watch request, so a rotated service-account token is picked up.
//
// Errors name the field: "service.port: invalid port value: 0", "[1].id: duplicate id value".
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "turnpike/status.h"

namespace turnpike::discovery {

enum class NamespaceFilter { kNone, kEqual, kNotEqual, kMatch, kNotMatch };

struct KubernetesClusterConfig {
  std::string id;  // the list form only
  std::string host;
  int port = 0;
  std::string token;       // set, or token_file is
  std::string token_file;  // read before each request
  NamespaceFilter namespace_filter = NamespaceFilter::kNone;
  std::string namespace_value;                 // kEqual / kNotEqual
  std::vector<std::string> namespace_regexes;  // kMatch / kNotMatch (validated PCRE2)
  std::string label_selector;
  int default_weight = 50;
  bool watch_endpoint_slices = false;

  // Not config.yaml keys (tests shorten them).
  uint64_t retry_min_ms = 1000;   // back-off after a failed list or watch, doubling...
  uint64_t retry_max_ms = 40000;  // ...up to this (APISIX retries every 40 s)
  // A watch's timeoutSeconds; 0: 1800 + random(9..999), as APISIX. The read timeout is this
  // plus 120 s.
  int watch_timeout_s = 0;
  int list_limit = 120;  // items per list page (`limit`), as APISIX
};

struct KubernetesConfig {
  bool multi = false;  // the list form: service names are `<id>/<namespace>/<name>:<port>`
  std::vector<KubernetesClusterConfig> clusters;
};

// A token as APISIX's util.trim leaves it: without whitespace (spaces, tabs, CR, LF) around.
std::string TrimToken(std::string_view token);

// Validates `discovery.kubernetes` and reads its ${ENV} references.
StatusOr<KubernetesConfig> ParseKubernetesConfig(const nlohmann::json& conf);

}  // namespace turnpike::discovery
