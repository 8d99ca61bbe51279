#include "support/turnpike.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <iostream>

#include "support/net.h"

namespace turnpike::testing {

std::string GatewayConfigYaml(int port, const TurnpikeOptions& options) {
  std::string y;
  y += "apisix:\n";
  y += "  node_listen:\n";
  y += "    - ip: 127.0.0.1\n";
  y += "      port: " + std::to_string(port) + "\n";
  y += "  enable_ipv6: false\n";
  if (options.control_port == 0) y += "  enable_control: false\n";
  if (options.control_port > 0) {
    y += "  control:\n    ip: 127.0.0.1\n    port: " + std::to_string(options.control_port) + "\n";
  }
  y += options.apisix_extra;
  y += "deployment:\n";
  y += "  role: data_plane\n";
  y += "  role_data_plane:\n";
  y += "    config_provider: yaml\n";
  y += "nginx_config:\n";
  y += "  worker_processes: " + std::to_string(options.worker_processes) + "\n";
  y += options.nginx_extra;
  y += "  http:\n";
  y += "    keepalive_timeout: " + options.keepalive_timeout + "\n";
  y += "    client_max_body_size: " + options.client_max_body_size + "\n";
  y += options.http_extra;
  y += "turnpike:\n";
  y += "  drain_timeout: " + options.drain_timeout + "\n";
  y += options.top_extra;
  return y;
}

Turnpike::Turnpike(std::string binary) : binary_(std::move(binary)) {}

Turnpike::~Turnpike() {
  if (process_ && process_->Running()) {
    // Every test ends with a graceful stop, so every test also checks that the daemon exits
    // cleanly on SIGTERM, and, in the sanitizer build, LeakSanitizer checks it at exit. One
    // still draining (a request left hanging by the test) after kStopWait is killed.
    constexpr std::chrono::milliseconds kStopWait{3000};
    std::optional<ExitStatus> st = Stop(kStopWait);
    if (st && !st->Success()) {
      ADD_FAILURE() << "turnpike exited with " << st->ToString()
                    << " on SIGTERM at the end of the test";
    }
  }
  if (process_ && ::testing::Test::HasFailure()) {
    std::string err = Stderr();
    constexpr size_t kTail = 6000;
    if (err.size() > kTail) err = "..." + err.substr(err.size() - kTail);
    std::string state =
        process_->Running() ? "still running" : "exited: " + process_->exit_status()->ToString();
    std::cerr << "---- turnpike stderr (" << dir_.path() << ", " << state << ") ----\n"
              << err << "\n---- end of turnpike stderr ----\n";
  }
}

pid_t Turnpike::Pid() const { return process_ ? process_->Pid() : -1; }

bool Turnpike::Start(const std::string& routes_yaml, const TurnpikeOptions& options) {
  if (!dir_.ok()) {
    error_ = "cannot create a temp dir";
    return false;
  }
  if (!WriteFile(routes_path(), routes_yaml, &error_)) return false;
  for (int attempt = 0; attempt < 3; ++attempt) {
    port_ = FreePort();
    if (port_ == 0 || !WriteFile(config_path(), GatewayConfigYaml(port_, options), &error_)) {
      if (error_.empty()) error_ = "no free port";
      return false;
    }
    ProcessOptions popts;
    popts.env = options.env;
    popts.stdout_file = dir_.File("stdout.log");
    popts.stderr_file = dir_.File("stderr.log");
    process_ = Process::Start(binary_, {"-c", config_path()}, popts, &error_);
    if (!process_) return false;
    // A bound for a hang, not a speed test (a daemon that fails exits, and that is seen at
    // once): generous, because 50k routes under ASan on a loaded 2-core machine take ~15 s.
    constexpr int kStartSeconds = 60;
    if (WaitForPort(port_, std::chrono::seconds(kStartSeconds),
                    [this] { return process_->Running(); })) {
      return true;
    }
    std::string err = Stderr();
    if (process_->Running()) {
      error_ = "turnpike did not accept connections on port " + std::to_string(port_) +
               " within " + std::to_string(kStartSeconds) + " s; stderr:\n" + err;
      return false;
    }
    error_ = "turnpike exited (" + process_->exit_status()->ToString() +
             ") before accepting connections; stderr:\n" + err;
    if (err.find("in use") == std::string::npos) return false;  // not a port race
  }
  return false;
}

bool Turnpike::RewriteRoutes(const std::string& yaml) {
  return WriteFileAtomic(routes_path(), yaml, &error_);
}

bool Turnpike::Reload() { return process_ && process_->Signal(SIGHUP); }

std::optional<ExitStatus> Turnpike::Stop(std::chrono::milliseconds timeout) {
  if (!process_) return std::nullopt;
  if (process_->exit_status()) return process_->exit_status();
  process_->Signal(SIGTERM);
  return process_->Wait(timeout);
}

std::string Turnpike::Stderr() const { return ReadFile(dir_.File("stderr.log")); }

}  // namespace turnpike::testing
