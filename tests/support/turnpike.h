// The Turnpike daemon as a child process of a test: writes config.yaml + apisix.yaml into a
// fresh temp dir, starts `turnpike -c <dir>/config.yaml` and waits until it accepts
// connections on 127.0.0.1:<port>.
//
// Not thread-safe: drive it from the test's main thread (RewriteRoutes and Reload may be
// called while other threads send requests to port()).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/files.h"
#include "support/process.h"

namespace turnpike::testing {

struct TurnpikeOptions {
  int worker_processes = 2;
  std::string keepalive_timeout = "60s";
  std::string client_max_body_size = "0";
  std::string drain_timeout = "5s";
  // Extra lines placed under `apisix:` (each indented by two spaces), e.g.
  // "  show_upstream_status_in_response_header: true\n".
  std::string apisix_extra;
  std::vector<std::string> env;  // extra "NAME=value" for the daemon
  // Extra lines under `nginx_config.http:` (each indented by four spaces).
  std::string http_extra;
  // Extra lines under `nginx_config:` (each indented by two spaces), e.g.
  // "  event:\n    worker_connections: 4\n".
  std::string nginx_extra;
  // Extra top-level YAML appended at the end (e.g. a `plugins:` list).
  std::string top_extra;
  // The control API (apisix.control.port on 127.0.0.1). 0 turns it off
  // (`enable_control: false`), so that daemons of different tests do not race for APISIX's
  // default 9090; -1 says nothing about it (on, 127.0.0.1:9090 unless apisix_extra says more).
  int control_port = 0;
};

// config.yaml for a daemon listening on 127.0.0.1:`port` (and nowhere else).
std::string GatewayConfigYaml(int port, const TurnpikeOptions& options = {});

class Turnpike {
 public:
  explicit Turnpike(std::string binary);
  // Stops the daemon if still running: SIGTERM, then SIGKILL if it has not exited within 3 s.
  // Exiting with a failure status on that SIGTERM fails the current test. If the current test
  // failed, prints the tail of the daemon's stderr to help diagnose it.
  ~Turnpike();
  Turnpike(const Turnpike&) = delete;
  Turnpike& operator=(const Turnpike&) = delete;

  // Writes both files (`routes_yaml` verbatim, so include the `#END` line), picks a free port,
  // starts the daemon and waits up to 15 s for the port to accept. Retries with another port
  // if the chosen one was taken meanwhile. False and error() on failure.
  bool Start(const std::string& routes_yaml, const TurnpikeOptions& options = {});

  const std::string& error() const { return error_; }
  int port() const { return port_; }
  pid_t Pid() const;
  Process* process() { return process_.get(); }
  const TempDir& dir() const { return dir_; }
  std::string config_path() const { return dir_.File("config.yaml"); }
  std::string routes_path() const { return dir_.File("apisix.yaml"); }

  // Replaces apisix.yaml atomically (write + rename). Does not signal the daemon.
  bool RewriteRoutes(const std::string& yaml);
  // Sends SIGHUP.
  bool Reload();
  // SIGTERM, then waits up to `timeout`; nullopt if it did not exit in time.
  std::optional<ExitStatus> Stop(std::chrono::milliseconds timeout = std::chrono::seconds(15));

  std::string Stderr() const;

 private:
  std::string binary_;
  TempDir dir_;
  int port_ = 0;
  std::unique_ptr<Process> process_;
  std::string error_;
};

}  // namespace turnpike::testing
