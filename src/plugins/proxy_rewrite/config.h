// proxy-rewrite: configuration part. APISIX's `proxy-rewrite` plugin (priority 1008, rewrite
// phase; reference §4.2): rewrites what is sent upstream — the target, the method, the Host
// and request headers.
//
//   proxy-rewrite:
//     uri: "/v2/$arg_user/${http_x_tenant ?? public}"   # a template; wins over regex_uri
//     regex_uri: ["^/api/v1/(.*)", "/v1/$1",            # pattern, replacement pairs: the
//                 "^/api/(.*)", "/$1"]                  # first pattern that matches is used
//     method: POST
//     host: backend.internal:8080
//     headers:                                          # add -> set -> remove, in this order
//       add: {X-Trace: ["a", "$remote_addr"]}           # one more line per value
//       set: {X-Version: "$1", X-Api-Key: ""}           # "" (after rendering) removes
//       remove: [Cookie]
//     use_real_request_uri_unsafe: false
//
// Schema (APISIX's, with its error words): at least one property; `uri` a string of 1..4096
// starting with "/"; `regex_uri` an array of >= 2 strings, of even length, every pattern a
// valid PCRE2 pattern and every replacement of ngx.re.sub's syntax ($N, ${N}, $$); `method` one
// of GET POST PUT HEAD DELETE OPTIONS MKCOL COPY MOVE PROPFIND LOCK UNLOCK PATCH TRACE; `host`
// matching ^[0-9a-zA-Z-.]+(:\d{1,5})?$; `headers` either the new form (an object of `add` /
// `set`: non-empty objects of names without ':' to a string, a number or a non-empty array of
// them, and `remove`: a non-empty array of names without ':'; nothing else) or the legacy form
// (a non-empty object of names to a string or a number, meaning `set`; names of visible ASCII
// without ':', values of printable ASCII); `use_real_request_uri_unsafe` a boolean. Other
// properties are ignored, as APISIX's schema allows them.
//
// Everything is compiled here, once: `uri` and header values are turnpike::Templates ($var,
// ${var}, ${var ?? default}; header values also $N / ${N}, the captures of the regex_uri pattern
// that matched), patterns are turnpike::Regexes (PCRE2, JIT), replacements Templates of
// ngx.re.sub's syntax.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "turnpike/plugin.h"
#include "turnpike/regex.h"
#include "turnpike/template.h"

namespace turnpike::plugins::proxy_rewrite {

// One regex_uri pair.
struct RegexRule {
  Regex pattern;
  Template replacement;      // ngx.re.sub syntax: captures only
  std::string pattern_text;  // for error messages
};

// One header of `add` or `set`: a scalar is one value, an array several (one line each).
struct HeaderRule {
  std::string name;
  std::vector<Template> values;  // captures and variables
};

struct Config {
  bool has_uri = false;
  Template uri;  // `?` in substituted values becomes %3F
  std::vector<RegexRule> regex_uri;
  std::string method;  // "" keeps the client's
  std::string host;    // "" keeps what pass_host says
  std::vector<HeaderRule> add;
  std::vector<HeaderRule> set;
  std::vector<std::string> remove;
  bool use_real_request_uri_unsafe = false;
  uint32_t max_captures = 0;  // the most capture groups of a regex_uri pattern
};

// Control thread. Validates like APISIX's schema and check_schema; errors read like theirs,
// e.g. `property "method" validation failed: matches none of the enum values`.
StatusOr<Config> ParseConfig(const nlohmann::json& conf);

}  // namespace turnpike::plugins::proxy_rewrite
