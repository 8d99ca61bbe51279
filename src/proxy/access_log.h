// AccessLog: nginx's access_log as a log-phase consumer of the request variables.
//
// Each finished request renders config.yaml's access_log_format — compiled once at load
// (config::GatewayConfig::access_log_template, nginx's log_format rules and escaping) —
// through its RequestVars, the same proxy::RequestContext that plugins, `vars` and templates
// read, so a line never disagrees with a variable of the same name ($upstream_addr is the
// resolved address of every attempt, as the variable is). The line goes to a LogFile
// (turnpike/log_file.h), which the daemon's log writer thread writes.
//
// Built on the control thread at startup, immutable, shared by every worker. Log() runs on a
// worker in the log phase (Exchange::RunLogPhase) for every request answered:
// proxied, answered by a plugin, or by Turnpike itself (404, 400, 413, ...); a client that
// goes away mid-exchange is not logged. Cost: one render and one copy into the file's
// buffer; no I/O, no lock but the file's, no allocation once warm (`line` is the worker's).
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "turnpike/log_file.h"
#include "turnpike/request_vars.h"
#include "turnpike/template.h"

namespace turnpike::proxy {

class AccessLog {
 public:
  // `format`: the compiled access_log_format; `file`: where its lines go.
  AccessLog(Template format, std::shared_ptr<LogFile> file)
      : format_(std::move(format)), file_(std::move(file)) {}

  // Worker, log phase. Renders the line into `line` (cleared first) and queues it; a line
  // the file has no room for is dropped and counted (LogFile::dropped).
  void Log(RequestVars& vars, std::string* line) const {
    format_.Render(vars, line);
    file_->Append(*line);
  }

  const LogFile& file() const { return *file_; }

 private:
  const Template format_;
  const std::shared_ptr<LogFile> file_;
};

}  // namespace turnpike::proxy
