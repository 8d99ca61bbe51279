#include "support/redis.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "support/net.h"

namespace turnpike::testing {
namespace {

constexpr const char* kServer = "/usr/bin/redis-server";
constexpr const char* kCli = "/usr/bin/redis-cli";

}  // namespace

RedisServer::RedisServer() : port_(FreePort()) {}

RedisServer::~RedisServer() {
  Kill();
  if (!sentinel_conf_.empty()) std::remove(sentinel_conf_.c_str());
}

bool RedisServer::Available() { return access(kServer, X_OK) == 0 && access(kCli, X_OK) == 0; }

bool RedisServer::Start(const std::vector<std::string>& extra) {
  return StartWith([&extra](int) { return extra; });
}

bool RedisServer::StartWith(const std::function<std::vector<std::string>(int port)>& extra) {
  return Launch([&extra](int port) {
    std::vector<std::string> args = {"--port", std::to_string(port), "--bind", "127.0.0.1",
                                     "--save", "", "--appendonly", "no", "--daemonize", "no",
                                     "--protected-mode", "no"};
    std::vector<std::string> more = extra(port);
    args.insert(args.end(), more.begin(), more.end());
    return args;
  });
}

bool RedisServer::StartSentinel(int master_port, const std::string& name) {
  return Launch([this, master_port, &name](int port) -> std::vector<std::string> {
    // A sentinel rewrites its config file, so it gets one of its own.
    if (!sentinel_conf_.empty()) std::remove(sentinel_conf_.c_str());
    sentinel_conf_ =
        "/tmp/turnpike-sentinel-" + std::to_string(getpid()) + "-" + std::to_string(port) + ".conf";
    FILE* f = std::fopen(sentinel_conf_.c_str(), "w");
    if (f == nullptr) return {};
    std::fprintf(f,
                 "port %d\nbind 127.0.0.1\nprotected-mode no\ndaemonize no\n"
                 "sentinel monitor %s 127.0.0.1 %d 1\n"
                 "sentinel down-after-milliseconds %s 500\n"
                 "sentinel failover-timeout %s 2000\n",
                 port, name.c_str(), master_port, name.c_str(), name.c_str());
    std::fclose(f);
    return {sentinel_conf_, "--sentinel"};
  });
}

bool RedisServer::Launch(const std::function<std::vector<std::string>(int port)>& args) {
  for (int attempt = 1;; ++attempt) {
    if (port_ == 0) {
      error_ = "no free port";
      return false;
    }
    std::vector<std::string> argv = args(port_);
    if (argv.empty()) {
      error_ = "cannot write " + sentinel_conf_;
      return false;
    }
    bool port_lost = false;
    if (LaunchOnce(argv, &port_lost)) {
      started_ = true;
      return true;
    }
    if (!port_lost || started_ || attempt == 5) return false;
    std::fprintf(stderr, "redis-server: port %d was taken (%s); trying another\n", port_,
                 error_.c_str());
    port_ = FreePort();
  }
}

bool RedisServer::LaunchOnce(const std::vector<std::string>& args, bool* port_lost) {
  ProcessOptions options;
  options.stdout_file = "/dev/null";
  process_ = Process::Start(kServer, args, options, &error_);
  if (process_ == nullptr) return false;
  const std::string own = "process_id:" + std::to_string(process_->Pid());
  for (int i = 0; i < 200; ++i) {
    if (!process_->Running()) {
      // Nearly always the port (bind: address in use); nothing else makes a fresh server exit.
      error_ = "redis-server exited: " + process_->exit_status()->ToString();
      *port_lost = true;
      return false;
    }
    if (Command({"PING"}) == "PONG") {
      if (Command({"INFO", "server"}).find(own) != std::string::npos) return true;
      // Another test's server holds the port; ours will fail to bind and exit.
      error_ = "another redis-server answers on port " + std::to_string(port_);
      *port_lost = true;
      Kill();
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  error_ = "redis-server did not answer PING within 5 s";
  return false;
}

void RedisServer::Kill() {
  if (process_ == nullptr) return;
  process_->Signal(SIGCONT);
  process_->Signal(SIGKILL);
  process_->Wait(std::chrono::seconds(5));
  process_.reset();
}

void RedisServer::Pause() {
  if (process_ != nullptr) process_->Signal(SIGSTOP);
}

void RedisServer::Resume() {
  if (process_ != nullptr) process_->Signal(SIGCONT);
}

std::string RedisServer::Command(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"-h", "127.0.0.1", "-p", std::to_string(port_)};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult r = RunProcess(kCli, argv, std::chrono::seconds(5));
  std::string out = r.out;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace turnpike::testing
