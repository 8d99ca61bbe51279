// response-rewrite: configuration part. APISIX's `response-rewrite` plugin (priority 899):
// rewrites the status, headers and body of the response, optionally only when `vars`
// matches (evaluated in header_filter, so `status` is the response's).
//
//   response-rewrite:
//     status_code: 200..598
//     body: "..."               # replaces the body; body_base64: true -> decoded first
//     filters:                  # or: regex substitutions on the whole body (not with body)
//       - {regex: "hello", replace: "hi", scope: once|global, options: "jo"}
//     headers: {X-A: "1", X-B: "$remote_addr"}                  # old form: set
//     headers: {add: ["X-A: 1"], set: {X-B: "v"}, remove: ["X-C"]}  # new form
//     vars: [["status", "==", 200]]
//     max_resp_body_size: 67108864   # bytes of body the filters buffer
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "plugins/response_rewrite/substitution.h"
#include "turnpike/expression.h"
#include "turnpike/plugin.h"
#include "turnpike/template.h"

namespace turnpike::plugins::response_rewrite {

struct HeaderOp {
  std::string name;
  Template value;
};

struct Config {
  std::optional<int> status_code;
  std::optional<std::string> body;  // decoded when body_base64
  std::vector<Substitution> filters;
  size_t max_resp_body_size = 67108864;
  // Applied in this order, as APISIX does: add, set, remove.
  std::vector<HeaderOp> add;
  std::vector<HeaderOp> set;
  std::vector<std::string> remove;
  ExpressionConstPtr vars;  // null: always rewrite
};

// Control thread. Validates like APISIX's schema and check_schema; stricter in two places:
// `headers.add` entries that APISIX would fail to parse per request ("X A: b") and
// replacement templates with a stray '$' are rejected here.
StatusOr<Config> ParseConfig(const nlohmann::json& conf);

// ngx.decode_base64: the standard alphabet, '=' padding optional; nullopt when invalid.
std::optional<std::string> DecodeBase64(std::string_view in);

}  // namespace turnpike::plugins::response_rewrite
