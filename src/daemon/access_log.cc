#include "daemon/access_log.h"

namespace turnpike::daemon {

StatusOr<std::shared_ptr<const proxy::AccessLog>> OpenAccessLog(
    const config::GatewayConfig& gateway, logging::LogWriter& writer) {
  StatusOr<std::shared_ptr<LogFile>> file = writer.Open(gateway.access_log);
  if (!file.ok()) return Status::Error("access log " + file.status().message());
  return std::shared_ptr<const proxy::AccessLog>(
      std::make_shared<proxy::AccessLog>(gateway.access_log_template, std::move(file).value()));
}

}  // namespace turnpike::daemon
