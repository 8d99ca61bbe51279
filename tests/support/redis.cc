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
  std::vector<std::string> args = {
      "--port", std::to_string(port_), "--bind", "127.0.0.1",        "--save", "", "--appendonly",
      "no",     "--daemonize",         "no",     "--protected-mode", "no"};
  args.insert(args.end(), extra.begin(), extra.end());
  return Launch(args);
}

bool RedisServer::StartSentinel(int master_port, const std::string& name) {
  // A sentinel rewrites its config file, so it gets one of its own.
  sentinel_conf_ =
      "/tmp/turnpike-sentinel-" + std::to_string(getpid()) + "-" + std::to_string(port_) + ".conf";
  FILE* f = std::fopen(sentinel_conf_.c_str(), "w");
  if (f == nullptr) {
    error_ = "cannot write " + sentinel_conf_;
    return false;
  }
  std::fprintf(f,
               "port %d\nbind 127.0.0.1\nprotected-mode no\ndaemonize no\n"
               "sentinel monitor %s 127.0.0.1 %d 1\n"
               "sentinel down-after-milliseconds %s 500\n"
               "sentinel failover-timeout %s 2000\n",
               port_, name.c_str(), master_port, name.c_str(), name.c_str());
  std::fclose(f);
  return Launch({sentinel_conf_, "--sentinel"});
}

bool RedisServer::Launch(const std::vector<std::string>& args) {
  if (port_ == 0) {
    error_ = "no free port";
    return false;
  }
  ProcessOptions options;
  options.stdout_file = "/dev/null";
  process_ = Process::Start(kServer, args, options, &error_);
  if (process_ == nullptr) return false;
  for (int i = 0; i < 200; ++i) {
    if (Command({"PING"}) == "PONG") return true;
    if (!process_->Running()) {
      error_ = "redis-server exited: " + process_->exit_status()->ToString();
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
