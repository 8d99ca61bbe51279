// HashKey: which string of a request consistent hashing (`type: chash`) hashes, from the
// upstream's `hash_on` and `key` (reference §3.1, §3.3), as APISIX's balancer/chash.lua
// fetches it:
//
//   hash_on            key                      the string hashed
//   vars (default)     remote_addr, arg_user    that variable: $remote_addr, $arg_user
//   header             X-User                   the request header X-User ($http_x_user)
//   cookie             session                  the cookie `session` ($cookie_session)
//   consumer           (none)                   the authenticated consumer's name
//   vars_combinations  "$http_a-$arg_b"         the template rendered
//
// When that value is missing (nil in APISIX: no such header, cookie or argument; a template
// none of whose variables resolved; no consumer) the client address ($remote_addr) is
// hashed instead. An empty value that exists (`X-User:` with nothing after it) is hashed as
// the empty string, as APISIX does. Turnpike has no consumers yet, so `consumer` always falls
// back to $remote_addr, which is what APISIX does for a request without one.
//
// Compiled on the control thread (variable names to VarRefs, the template parsed), then
// immutable; Hash() runs on workers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "turnpike/request_vars.h"
#include "turnpike/status.h"
#include "turnpike/template.h"

namespace turnpike::upstream {

enum class HashOn : uint8_t { kVars, kHeader, kCookie, kConsumer, kVarsCombinations };

// "vars", "header", "cookie", "consumer", "vars_combinations"; nullopt for anything else.
std::optional<HashOn> ParseHashOn(std::string_view name);

class HashKey {
 public:
  // Hashes $remote_addr (vars / remote_addr).
  HashKey();

  // Control thread. `key` as validated by the config (config/upstream_spec.cc: a variable
  // name of APISIX's list or arg_*, a header or cookie name, any template; ignored for
  // consumer). A variable Turnpike does not know (mqtt_client_id, a stream variable) is
  // always missing, as it is nil in an HTTP request in APISIX.
  static HashKey Compile(HashOn on, std::string_view key);

  // Worker, hot path. The CRC-32 of the request's key string (or of $remote_addr when it is
  // missing). `scratch` holds a rendered template (vars_combinations only); it keeps its
  // capacity, so warm requests allocate nothing. Costs one variable lookup (a header scan,
  // the cookie header's scan, ...) or one template rendering, and one pass over the key.
  uint32_t Hash(RequestVars& vars, std::string* scratch) const;

  HashOn on() const { return on_; }

 private:
  HashOn on_ = HashOn::kVars;
  std::optional<VarRef> var_;  // vars, header, cookie; nullopt: always missing
  Template combination_;       // vars_combinations
  VarRef remote_addr_;
};

}  // namespace turnpike::upstream
