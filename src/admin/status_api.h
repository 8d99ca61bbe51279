// The status API (`apisix.status`): what `GET /status` and `GET /status/ready` answer.
//
// Pure functions, no I/O: the listener (status_server.h) feeds them a StatusReport taken at
// the moment of the request. Any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/http_method.h"

namespace turnpike::admin {

// The daemon's state as the status endpoints report it.
struct StatusReport {
  uint64_t config_version = 0;  // the config version every worker serves (0: none yet)
  size_t workers = 0;           // workers started (or about to be)
  size_t ready_workers = 0;     // workers that have loaded their first snapshot
  std::string waiting_for;      // control services not ready yet ("discovery"), ", "-joined
};

// An answer of a handler-driven server (the metrics exporter's, the control API's).
struct HttpAnswer {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

struct StatusAnswer {
  int status = 200;
  std::string body;  // compact JSON object followed by "\n" (APISIX's convention)
};

// `path` without the query string. Routes:
//   /status        200 {"status":"ok","config_version":N}: the process is running.
//   /status/ready  200 as above once every worker has loaded config, else 503
//                  {"status":"error","error":"worker count: N but status report count: M",
//                   "config_version":V}; then, until every control service is ready (the
//                  first DNS and discovery answers), 503 with "error":"waiting for: <names>".
//   anything else  404 {"error_msg":"not found"}; methods other than GET and HEAD get 405.
StatusAnswer AnswerStatusRequest(base::Method method, std::string_view path,
                                 const StatusReport& report);

}  // namespace turnpike::admin
