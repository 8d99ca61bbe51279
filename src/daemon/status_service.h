// StatusService: the `apisix.status` listener (admin::StatusServer) as a control service.
// Listens before the first config load, so /status/ready answers 503 while it runs; closes
// when draining starts, like every listener. Does nothing when `apisix.status` is absent.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "admin/status_server.h"
#include "config/specs.h"
#include "daemon/control_service.h"

namespace turnpike::daemon {

class StatusService final : public ControlService {
 public:
  StatusService(std::optional<config::ListenAddr> at, std::function<admin::StatusReport()> report)
      : at_(std::move(at)), report_(std::move(report)) {}

  std::string_view name() const override { return "status"; }
  Status Start(uv_loop_t* loop) override;
  void Stop() override {
    if (server_) server_->Close();
  }

 private:
  std::optional<config::ListenAddr> at_;
  std::function<admin::StatusReport()> report_;
  std::unique_ptr<admin::StatusServer> server_;
};

}  // namespace turnpike::daemon
