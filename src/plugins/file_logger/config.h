// file-logger: configuration part. APISIX's `file-logger` plugin (priority 399): one JSON
// object per request, appended as a line to `path`.
//
//   file-logger:
//     path: logs/access.json                      # required
//     log_format: {host: "$host", "@ts": "$time_iso8601", req: {m: "$request_method"}}
//     log_format_extra: {trace: "$http_x_trace"}  # added to the default entry
//     include_req_body: false
//     include_req_body_expr: [["arg_log_body", "==", "yes"]]
//     include_resp_body: false
//     include_resp_body_expr: [["status", "==", "200"]]
//     max_req_body_bytes: 524288
//     max_resp_body_bytes: 524288
//     match: [["arg_name", "==", "jack"]]         # log only matching requests
//
// log_format values: "$var" (a request variable, left out when nil), other strings and JSON
// scalars as literals, objects nested up to five levels (deeper ones become {}). Without
// log_format the entry is APISIX's full log (log-util get_full_log).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "turnpike/expression.h"
#include "turnpike/plugin.h"
#include "turnpike/request_vars.h"

namespace turnpike::plugins::file_logger {

// One key of a log_format, compiled.
struct FormatField {
  enum class Kind : uint8_t {
    kVar,          // "$name": the variable (absent when nil)
    kUnknownVar,   // "$name" Turnpike does not know: always nil, as in APISIX
    kRequestBody,  // "$request_body": the buffered body, capped at max_req_body_bytes
    kLiteral,      // anything else: `literal` holds its JSON text
    kObject,       // nested format
  };
  std::string key_json;  // the key, JSON-encoded with its quotes
  std::string key;
  Kind kind = Kind::kLiteral;
  VarRef var;
  std::string literal;
  std::vector<FormatField> children;
};

// The variables the entry itself reads (the default entry's fields; route_id and service_id
// after a log_format), compiled with the Config.
struct EntryVars {
  EntryVars();
  VarRef scheme, host, server_port, request_uri, request_method, args, request_length, bytes_sent,
      upstream_addr, route_id, service_id, remote_addr, hostname;
};

struct Config {
  std::string path;
  std::optional<std::vector<FormatField>> log_format;
  std::vector<FormatField> log_format_extra;
  bool include_req_body = false;
  ExpressionConstPtr include_req_body_expr;
  bool include_resp_body = false;
  ExpressionConstPtr include_resp_body_expr;
  uint64_t max_req_body_bytes = 524288;
  uint64_t max_resp_body_bytes = 524288;
  // `match`: the request is logged when one of these holds (APISIX evaluates each item of
  // the list on its own and stops at the first true one).
  std::vector<ExpressionConstPtr> match;
  EntryVars vars;
};

// Control thread. Validates like APISIX's schema and check_schema.
StatusOr<Config> ParseConfig(const nlohmann::json& conf);

}  // namespace turnpike::plugins::file_logger
