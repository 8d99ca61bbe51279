#include "daemon/control_api_service.h"

#include <spdlog/spdlog.h>

namespace turnpike::daemon {

Status ControlApiService::Start(uv_loop_t* loop) {
  if (!at_) return Status::Ok();
  server_ = std::make_unique<admin::StatusServer>(
      loop, [this](base::Method method, std::string_view path) {
        return admin::AnswerControlRequest(method, path, hooks_);
      });
  Status listening = server_->Listen(*at_);
  if (!listening.ok()) {
    server_->Close();
    if (configured_) return Status::Error("apisix.control: " + listening.message());
    spdlog::error(
        "control API (default {}:{}): {}; not served (set apisix.control.port or "
        "apisix.enable_control: false)",
        at_->ip, at_->port, listening.message());
    return Status::Ok();
  }
  listening_ = true;
  spdlog::info("control API on {}:{}", at_->ip, server_->port());
  return Status::Ok();
}

}  // namespace turnpike::daemon
