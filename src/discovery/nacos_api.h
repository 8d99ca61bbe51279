// Nacos v1 open API pieces the nacos provider uses (reference §5.3): the request targets it sends
// and the answers it reads. Pure functions, no I/O; any thread.
//
//   login:  POST {prefix}auth/login?username=U&password=P
//           -> 200 {"accessToken":"...","tokenTtl":18000,"globalAdmin":true}
//   list:   GET {prefix}ns/instance/list?healthyOnly=true&serviceName=S[&accessToken=T]
//               &namespaceId=N&groupName=G[&ak=AK&data=MS@@G@@S&signature=B64(HMAC-SHA1(SK,data))]
//           -> 200 {"name":"G@@S","hosts":[{"ip":..,"port":..,"weight":1.0,"healthy":true,
//                   "enabled":true,"metadata":{..},..}],"lastRefTime":..,..}
//
// Nacos filters the instances itself (healthyOnly=true: healthy and enabled ones, or all when the
// healthy share is under the service's protect threshold); APISIX takes every instance of the
// answer as it is, and so does Turnpike.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "turnpike/discovery.h"

namespace turnpike::discovery {

// Percent-encodes everything but RFC 3986's unreserved characters (ngx.encode_args' escaping).
std::string NacosEncode(std::string_view s);

// "{prefix}auth/login?username=..&password=..".
std::string NacosLoginTarget(const std::string& prefix, std::string_view username,
                             std::string_view password);

struct NacosListQuery {
  std::string_view service_name;
  std::string_view namespace_id;  // "public" by default
  std::string_view group_name;    // "DEFAULT_GROUP" by default
  std::string_view access_token;  // "" : none
  // Both non-empty: the request is signed (Alibaba MSE) with `now_ms`.
  std::string_view access_key;
  std::string_view secret_key;
  uint64_t now_ms = 0;
};
std::string NacosListTarget(const std::string& prefix, const NacosListQuery& query);

// base64(HMAC-SHA1(key, data)).
std::string NacosSignature(std::string_view key, std::string_view data);

// The accessToken of a login answer and its lifetime (tokenTtl seconds, 0 when absent). False when
// the body is not a JSON object with a non-empty string accessToken.
bool ParseNacosLogin(std::string_view body, std::string* token, uint64_t* ttl_seconds);

// The raw text of member `name` of the top-level JSON object in `json` (e.g. the `hosts` array), by
// a scan that skips strings and nesting without building anything: equal spans mean equal
// instances, so a poll answering what it answered before costs a compare, not a parse. nullopt when
// `json` is not an object, has no such member or is malformed.
std::optional<std::string_view> FindTopLevelMember(std::string_view json, std::string_view name);

// The nodes of an instance-list answer, as APISIX makes them: {host: ip, port, weight: weight or
// `default_weight`}. A missing or non-array `hosts` is no instance. What breaks the discovery node
// schema is passed on marked so that the whole list counts as invalid (503, as APISIX): a missing
// or non-string ip gives host "", a port that is not an integer 0..65535 gives -1, a weight that is
// not an integer >= 0 (0.5, "2") gives -1. False, with `error`, when the body is not a JSON object
// or an entry of `hosts` is not an object.
bool ParseNacosInstances(std::string_view body, int default_weight, DiscoveredNodes* out,
                         std::string* error);

}  // namespace turnpike::discovery
