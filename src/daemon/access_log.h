// The access log: lines from every worker go to a file of the daemon's log writer
// (logging/log_writer.h), so workers never wait for disk I/O.
#pragma once

#include <memory>
#include <string>

#include "logging/log_writer.h"
#include "proxy/access_log.h"
#include "turnpike/status.h"

namespace turnpike::daemon {

// Control thread, at startup. `path` is opened for appending (created if missing) on the
// calling thread, so a path that cannot be opened is an error.
StatusOr<std::shared_ptr<proxy::AccessLog>> OpenAccessLog(const std::string& path,
                                                          logging::LogWriter& writer);

}  // namespace turnpike::daemon
