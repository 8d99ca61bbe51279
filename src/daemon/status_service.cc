#include "daemon/status_service.h"

#include <spdlog/spdlog.h>

namespace turnpike::daemon {

Status StatusService::Start(uv_loop_t* loop) {
  if (!at_) return Status::Ok();
  server_ = std::make_unique<admin::StatusServer>(loop, report_);
  Status listening = server_->Listen(*at_);
  if (!listening.ok()) return Status::Error("apisix.status: " + listening.message());
  spdlog::info("status endpoints on {}:{}", at_->ip, server_->port());
  return Status::Ok();
}

}  // namespace turnpike::daemon
