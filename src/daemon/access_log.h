// The access log, set up at startup: nginx_config.http.access_log opened in the daemon's log
// writer (logging/log_writer.h), and the format compiled at load
// (GatewayConfig::access_log_template), which workers render per request
// (proxy/access_log.h).
#pragma once

#include <memory>

#include "config/specs.h"
#include "logging/log_writer.h"
#include "proxy/access_log.h"
#include "turnpike/status.h"

namespace turnpike::daemon {

// Control thread, at startup. `gateway.access_log` is opened for appending (created if
// missing) on the calling thread, so a path that cannot be opened is an error, as in nginx.
StatusOr<std::shared_ptr<const proxy::AccessLog>> OpenAccessLog(
    const config::GatewayConfig& gateway, logging::LogWriter& writer);

}  // namespace turnpike::daemon
