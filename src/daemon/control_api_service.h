// ControlApiService: the control API listener (`apisix.enable_control`, `apisix.control.ip` /
// `.port`, 127.0.0.1:9090 by default; admin/control_api.h says what it answers) as a control
// service: an admin::StatusServer on the control thread's loop, never on a worker. Its answers
// come from the control thread's own state (the view of the config in service, the discovery
// providers, the health checkers), so serving them costs the workers nothing.
//
// Listens before the first config load (until then the lists are `{}`) and closes when
// draining starts. A port that cannot be bound stops the daemon when config.yaml sets
// apisix.control; the default one is only logged (enable_control is on by default, so a
// second daemon on a host must still serve), as the prometheus exporter does.
// Control thread only.
#pragma once

#include <memory>
#include <optional>
#include <utility>

#include "admin/control_api.h"
#include "admin/status_server.h"
#include "config/specs.h"
#include "daemon/control_service.h"

namespace turnpike::daemon {

class ControlApiService final : public ControlService {
 public:
  // `at`: nullopt when the control API is disabled. `configured`: config.yaml sets it.
  ControlApiService(std::optional<config::ListenAddr> at, bool configured,
                    admin::ControlHooks hooks)
      : at_(std::move(at)), configured_(configured), hooks_(std::move(hooks)) {}

  std::string_view name() const override { return "control"; }
  Status Start(uv_loop_t* loop) override;
  void Stop() override {
    if (server_) server_->Close();
  }
  // The bound port; 0 when not listening.
  int port() const { return listening_ ? server_->port() : 0; }

 private:
  std::optional<config::ListenAddr> at_;
  bool configured_;
  admin::ControlHooks hooks_;
  std::unique_ptr<admin::StatusServer> server_;
  bool listening_ = false;
};

}  // namespace turnpike::daemon
