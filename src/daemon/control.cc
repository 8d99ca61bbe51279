#include "daemon/control.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "config/loader.h"
#include "core/listen_socket.h"
#include "daemon/access_log.h"

namespace turnpike::daemon {
namespace {

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

}  // namespace

Control::Control(std::shared_ptr<const config::GatewayConfig> gateway)
    : gateway_(std::move(gateway)) {}

Control::~Control() {
  if (joiner_.joinable()) joiner_.join();
}

bool Control::OpenListeners(std::vector<std::vector<int>>* per_worker) {
  const config::GatewayConfig& g = *gateway_;
  std::vector<core::ListenOptions> addrs;
  for (const config::ListenAddr& l : g.listen) {
    core::ListenOptions o;
    o.ip = l.ip;
    o.port = l.port;
    o.reuseport = g.enable_reuseport;
    addrs.push_back(o);
  }
  size_t required = addrs.size();
  if (g.enable_ipv6) {
    for (size_t i = 0; i < required; ++i) {
      if (addrs[i].ip == "0.0.0.0") {
        core::ListenOptions o = addrs[i];
        o.ip = "::";
        addrs.push_back(o);
      }
    }
  }
  per_worker->assign(static_cast<size_t>(g.worker_processes), {});
  for (size_t a = 0; a < addrs.size(); ++a) {
    bool optional = a >= required;  // the implicit [::] twin of 0.0.0.0
    int shared_fd = -1;
    for (size_t w = 0; w < per_worker->size(); ++w) {
      int fd = -1;
      if (addrs[a].reuseport || shared_fd < 0) {
        StatusOr<int> r = core::CreateListenSocket(addrs[a]);
        if (!r.ok()) {
          if (optional) {
            spdlog::warn("{} (IPv6 listener skipped)", r.status().message());
            break;
          }
          spdlog::critical("{}", r.status().message());
          return false;
        }
        fd = r.value();
        shared_fd = fd;
      } else {
        fd = dup(shared_fd);  // no SO_REUSEPORT: workers share one accept queue
      }
      (*per_worker)[w].push_back(fd);
    }
  }
  return true;
}

int Control::Run() {
  uv_loop_init(&loop_);
  loop_.data = this;
  signal(SIGPIPE, SIG_IGN);
  // Signals are handled before anything is served, so an early SIGHUP/SIGTERM is not fatal.
  uv_signal_init(&loop_, &sigterm_);
  uv_signal_init(&loop_, &sigint_);
  uv_signal_init(&loop_, &sighup_);
  sigterm_.data = sigint_.data = sighup_.data = this;
  uv_signal_start(&sigterm_, &OnSignal, SIGTERM);
  uv_signal_start(&sigint_, &OnSignal, SIGINT);
  uv_signal_start(&sighup_, &OnSignal, SIGHUP);

  Reload("startup", /*force=*/true);
  if (!current_) {
    // No usable routes file yet (APISIX starts with an empty config too): serve 404s and pick
    // the file up as soon as it becomes valid.
    std::vector<std::string> warnings;
    current_ = proxy::BuildSnapshot(*gateway_, config::RoutesConfig{}, nullptr, ++version_,
                                    &warnings);
  }

  std::vector<std::vector<int>> fds;
  if (!OpenListeners(&fds)) {
    for (auto& list : fds) {
      for (int fd : list) close(fd);
    }
    uv_loop_close(&loop_);
    return 1;
  }
  std::shared_ptr<proxy::AccessLog> access_log;
  if (gateway_->enable_access_log && !gateway_->access_log.empty()) {
    auto opened = OpenAccessLog(gateway_->access_log);
    if (!opened.ok()) {
      spdlog::critical("{}", opened.status().message());
      for (auto& list : fds) {
        for (int fd : list) close(fd);
      }
      uv_loop_close(&loop_);
      return 1;
    }
    access_log = opened.value();
  }
  for (size_t i = 0; i < fds.size(); ++i) {
    workers_.push_back(std::make_unique<proxy::Worker>(static_cast<int>(i), gateway_,
                                                       std::move(fds[i])));
    workers_.back()->set_access_log(access_log);
    workers_.back()->Start(current_);
  }
  std::string where;
  for (const auto& l : gateway_->listen) {
    where += (where.empty() ? "" : ", ") + l.ip + ":" + std::to_string(l.port);
  }
  spdlog::info("turnpike {} serving on {} with {} worker(s); routes from {}", TURNPIKE_VERSION,
               where, workers_.size(), gateway_->routes_file);

  uv_fs_poll_init(&loop_, &poll_);
  poll_.data = this;
  // stat() polling follows symlinks, so a Kubernetes ConfigMap swap (new inode) is seen too.
  uv_fs_poll_start(&poll_, &OnFilePoll, gateway_->routes_file.c_str(), 1000);
  uv_timer_init(&loop_, &drain_timer_);
  drain_timer_.data = this;
  uv_async_init(&loop_, &done_async_, &OnWorkersDone);
  done_async_.data = this;

  uv_run(&loop_, UV_RUN_DEFAULT);
  if (joiner_.joinable()) joiner_.join();
  workers_.clear();
  uv_loop_close(&loop_);
  spdlog::info("turnpike stopped");
  return 0;
}

void Control::Reload(const char* reason, bool force) {
  auto started = std::chrono::steady_clock::now();
  std::string text;
  const std::string& path = gateway_->routes_file;
  if (!ReadFile(path, &text)) {
    spdlog::error("reload ({}): cannot read {}; keeping config version {}", reason, path,
                  version_);
    return;
  }
  size_t hash = std::hash<std::string>{}(text);
  if (!force && current_ && hash == content_hash_) {
    spdlog::debug("reload ({}): {} unchanged", reason, path);
    return;
  }
  config::LoadResult<config::RoutesConfig> loaded = config::ParseRoutesConfig(text, path);
  for (const config::ConfigError& w : loaded.warnings) spdlog::warn("{}", w.ToString());
  for (const config::ConfigError& e : loaded.errors) spdlog::error("{}", e.ToString());
  if (!loaded.value) {
    spdlog::error("reload ({}): {} rejected; keeping config version {}", reason, path,
                  version_);
    return;
  }
  std::vector<std::string> warnings;
  proxy::BuildStats stats;
  proxy::SnapshotConstSharedPtr next =
      proxy::BuildSnapshot(*gateway_, *loaded.value, current_.get(), version_ + 1, &warnings,
                           &stats);
  for (const std::string& w : warnings) spdlog::warn("{}", w);
  ++version_;
  content_hash_ = hash;
  current_ = next;
  for (auto& w : workers_) w->Publish(next);
  auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
                .count();
  // warn, as APISIX logs its reloads: visible at the default error_log_level.
  spdlog::warn(
      "config version {} loaded ({}): {} routes, {} upstreams, {} nodes ({} node sets "
      "unchanged), {} errors, in {:.1f} ms",
      version_, reason, stats.routes, stats.upstreams, stats.nodes, stats.reused_node_sets,
      loaded.errors.size(), ms);
}

void Control::OnSignal(uv_signal_t* handle, int signum) {
  auto* c = static_cast<Control*>(handle->data);
  if (signum == SIGHUP) {
    if (!c->stopping_) c->Reload("SIGHUP", /*force=*/false);
    return;
  }
  c->BeginShutdown(signum);
}

void Control::OnFilePoll(uv_fs_poll_t* handle, int status, const uv_stat_t*, const uv_stat_t*) {
  auto* c = static_cast<Control*>(handle->data);
  if (c->stopping_) return;
  if (status < 0) {
    spdlog::warn("routes file {}: {}", c->gateway_->routes_file, uv_strerror(status));
    return;
  }
  c->Reload("file changed", /*force=*/false);
}

void Control::BeginShutdown(int signum) {
  if (stopping_) {
    spdlog::warn("second signal {}: closing all connections now", signum);
    for (auto& w : workers_) w->Abort();
    return;
  }
  stopping_ = true;
  spdlog::info("signal {}: draining (up to {:.1f} s)", signum, gateway_->drain_timeout);
  uv_fs_poll_stop(&poll_);
  for (auto& w : workers_) w->Drain();
  uv_timer_start(&drain_timer_, &OnDrainDeadline,
                 static_cast<uint64_t>(gateway_->drain_timeout * 1000), 0);
  joiner_ = std::thread([this] {
    for (auto& w : workers_) w->Join();
    uv_async_send(&done_async_);
  });
}

void Control::OnDrainDeadline(uv_timer_t* t) {
  auto* c = static_cast<Control*>(t->data);
  spdlog::warn("drain timeout: closing remaining connections");
  for (auto& w : c->workers_) w->Abort();
}

void Control::OnWorkersDone(uv_async_t* a) { static_cast<Control*>(a->data)->CloseHandles(); }

void Control::CloseHandles() {
  uv_timer_stop(&drain_timer_);
  auto h = [](auto* p) { return reinterpret_cast<uv_handle_t*>(p); };
  uv_close(h(&sigterm_), nullptr);
  uv_close(h(&sigint_), nullptr);
  uv_close(h(&sighup_), nullptr);
  uv_close(h(&poll_), nullptr);
  uv_close(h(&drain_timer_), nullptr);
  uv_close(h(&done_async_), nullptr);
}

}  // namespace turnpike::daemon
