// The access log: lines from every worker go through spdlog's asynchronous logger to a file,
// so workers never wait for disk I/O.
#pragma once

#include <memory>
#include <string>

#include "proxy/access_log.h"
#include "turnpike/status.h"

namespace turnpike::daemon {

// Control thread, at startup. `path` is opened for appending.
StatusOr<std::shared_ptr<proxy::AccessLog>> OpenAccessLog(const std::string& path);

}  // namespace turnpike::daemon
