#include "admin/status_api.h"

namespace turnpike::admin {
namespace {

std::string Ok(const StatusReport& r) {
  return "{\"status\":\"ok\",\"config_version\":" + std::to_string(r.config_version) + "}\n";
}

}  // namespace

StatusAnswer AnswerStatusRequest(base::Method method, std::string_view path,
                                 const StatusReport& report) {
  bool known = path == "/status" || path == "/status/ready";
  if (!known) return {404, "{\"error_msg\":\"not found\"}\n"};
  if (method != base::Method::kGet && method != base::Method::kHead) {
    return {405, "{\"error_msg\":\"method not allowed\"}\n"};
  }
  bool workers_ready = report.workers > 0 && report.ready_workers >= report.workers;
  bool ready = workers_ready && report.waiting_for.empty();
  if (path == "/status" || ready) return {200, Ok(report)};
  if (workers_ready) {
    return {503, "{\"status\":\"error\",\"error\":\"waiting for: " + report.waiting_for +
                     "\",\"config_version\":" + std::to_string(report.config_version) + "}\n"};
  }
  // APISIX's wording: each nginx worker reports once it has received configuration.
  return {503, "{\"status\":\"error\",\"error\":\"worker count: " + std::to_string(report.workers) +
                   " but status report count: " + std::to_string(report.ready_workers) +
                   "\",\"config_version\":" + std::to_string(report.config_version) + "}\n"};
}

}  // namespace turnpike::admin
