#include "daemon/control.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <string_view>

#include "base/courtesy.h"
#include "config/loader.h"
#include "core/listen_socket.h"
#include "daemon/access_log.h"
#include "daemon/builtin_plugins.h"
#include "daemon/builtin_providers.h"
#include "daemon/control_api_service.h"
#include "daemon/prometheus_service.h"
#include "daemon/status_service.h"

namespace turnpike::daemon {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// CPU time of the calling thread, in ms: what a reload costs whatever else competes for the
// CPU (wall time on a busy machine can be several times longer).
double ThreadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// Reads the whole file and fstat()s the descriptor it read from, so the stamp describes
// exactly the bytes returned. False with `error` (errno text) on failure.
bool ReadWhole(const std::string& path, std::string* out, struct stat* st, std::string* error) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = std::strerror(errno);
    return false;
  }
  if (fstat(fd, st) != 0) {
    *error = std::strerror(errno);
    close(fd);
    return false;
  }
  out->clear();
  out->resize(static_cast<size_t>(st->st_size) + 1);  // +1: notice a file that grew
  size_t used = 0;
  for (;;) {
    if (used == out->size()) out->resize(out->size() * 2);
    ssize_t n = read(fd, out->data() + used, out->size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = std::strerror(errno);
      close(fd);
      return false;
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  out->resize(used);
  close(fd);
  return true;
}

// When CPUs are scarce, a reload (a second or more of CPU for 50k routes) should yield to the
// workers, not the other way round: the pool thread that runs one drops to nice kReloadNice
// (Linux: per thread) and stays there, as everything on libuv's pool here (reloads, stat()
// polls) is control-plane work, with a short time slice (base/courtesy.h). Never raises the
// priority (that would need privileges).
constexpr int kReloadNice = 10;
void LowerThreadPriority() {
  thread_local bool done = false;
  if (done) return;
  done = true;
  base::SetBackgroundPriority(kReloadNice);
}

// The control thread itself (discovery, health checks, the exporters, the control API, the
// reload's hand-over) runs at nice kControlNice, as reloads do, once the workers run, with a
// short time slice, and yields at its courtesy points (a node set's nodes, a scrape's series):
// on CPUs the workers share, a request woken meanwhile does not wait for its time slice, and
// the control work runs mostly where the workers leave the CPU idle. At nice 10 it still gets
// ~10% of a CPU that a worker keeps busy (nice 19: ~1.4%, too little for health checks and
// discovery on a saturated machine). node_churn p99 churn/static (geometric means of 10
// paired rounds): 1.04, 1.06 (20 rounds), 1.11 at nice 5; 0.98 at nice 10; 0.96, 1.03 at 19.
// Never raises the priority.
// Discovery's work per change (a watch event's parse, the provider's merge, the Directory's
// node set) runs in base::IdleScopes where the process may come back from SCHED_IDLE (root, or
// CAP_SYS_NICE): on node_churn at 20 changes a second the p99 ratio was 1.54x at nice 10 and
// 1.14x with the control thread SCHED_IDLE.
constexpr int kControlNice = 10;
void LowerControlThreadPriority() {
  base::SetBackgroundPriority(kControlNice);
  base::SetCourtesy(true);
  if (base::EnableIdleScopes(kControlNice)) {
    spdlog::info("control thread: discovery work runs at idle priority (SCHED_IDLE scopes)");
  } else {
    spdlog::info(
        "control thread: discovery work runs at nice {} with courtesy yields (SCHED_IDLE scopes "
        "need CAP_SYS_NICE to come back)",
        kControlNice);
  }
}

// A reload also gives the CPU back every 100 us (base/courtesy.h), for its first
// kReloadCourtesyNs: workers woken meanwhile do not wait for its time slice. If the CPUs are
// still busy after that, it finishes at nice 10 without yielding.
constexpr int64_t kReloadCourtesyNs = 2'000'000'000;

}  // namespace

// One reload, run on libuv's thread pool: read, compare the content hash, parse, build. The
// inputs are copies (or shared immutable objects), so the job touches no Control state until
// FinishReload() runs on the control loop.
struct Control::ReloadJob {
  enum class Outcome { kUnreadable, kUnchanged, kRejected, kLoaded };

  uv_work_t req{};
  Control* control = nullptr;
  // Inputs.
  const char* reason = "";
  bool force = false;
  std::shared_ptr<const config::GatewayConfig> gateway;
  const proxy::PluginRegistry* plugins = nullptr;  // read-only, outlives the job
  MetricsRegistry* metrics = nullptr;              // outlives the job
  turnpike::Clock* clock = nullptr;                // outlives the job
  proxy::SnapshotConstSharedPtr previous;
  bool compare = false;    // previous_hash/previous_size describe the loaded file
  bool keep_view = false;  // build the control API's view
  uint64_t previous_hash = 0, previous_size = 0;
  uint64_t version = 0;  // the version a loaded snapshot gets
  Clock::time_point started;
  // Outputs.
  Outcome outcome = Outcome::kUnreadable;
  std::string read_error;
  bool have_stamp = false;
  FileStamp stamp;
  uint64_t hash = 0, size = 0;
  proxy::SnapshotConstSharedPtr snapshot;
  std::unique_ptr<admin::ControlView> view;
  proxy::BuildStats stats;
  size_t errors = 0;
  double read_ms = 0, parse_ms = 0, build_ms = 0, cpu_ms = 0;

  void Run() {
    LowerThreadPriority();
    base::SetCourtesyFor(kReloadCourtesyNs);
    double cpu_start = ThreadCpuMs();
    Work();
    base::SetCourtesy(false);
    cpu_ms = ThreadCpuMs() - cpu_start;
  }

 private:
  void Work() {
    const std::string& path = gateway->routes_file;
    auto t0 = Clock::now();
    std::string text;
    struct stat st {};
    if (!ReadWhole(path, &text, &st, &read_error)) return;
    have_stamp = true;
    stamp.dev = st.st_dev;
    stamp.ino = st.st_ino;
    stamp.size = static_cast<uint64_t>(st.st_size);
    stamp.mtime_sec = st.st_mtim.tv_sec;
    stamp.mtime_nsec = st.st_mtim.tv_nsec;
    stamp.ctime_sec = st.st_ctim.tv_sec;
    stamp.ctime_nsec = st.st_ctim.tv_nsec;
    hash = std::hash<std::string_view>{}(text);
    size = text.size();
    read_ms = MsSince(t0);
    if (!force && compare && hash == previous_hash && size == previous_size) {
      outcome = Outcome::kUnchanged;
      return;
    }
    auto t1 = Clock::now();
    config::LoadResult<config::RoutesConfig> loaded =
        config::ParseRoutesConfigForPath(text, path, {.keep_source = keep_view});
    parse_ms = MsSince(t1);
    for (const config::ConfigError& w : loaded.warnings) spdlog::warn("{}", w.ToString());
    for (const config::ConfigError& e : loaded.errors) spdlog::error("{}", e.ToString());
    errors = loaded.errors.size();
    if (!loaded.value) {
      outcome = Outcome::kRejected;
      return;
    }
    auto t2 = Clock::now();
    proxy::BuildReport report;
    snapshot = proxy::BuildSnapshot(
        {gateway.get(), &*loaded.value, previous.get(), version, plugins, metrics, clock}, &report);
    build_ms = MsSince(t2);
    for (const config::ConfigError& e : report.errors) spdlog::error("{}", e.ToString());
    for (const std::string& w : report.warnings) spdlog::warn("{}", w);
    errors += report.errors.size();
    stats = report.stats;
    // APISIX's modifiedIndex of a file's items is the file's mtime (seconds).
    if (keep_view) view = admin::ControlView::Build(*loaded.value, report.skipped, stamp.mtime_sec);
    outcome = Outcome::kLoaded;
    // `text` and the parsed config (large for big files) are freed here, off the control loop.
  }
};

Control::Control(std::shared_ptr<const config::GatewayConfig> gateway,
                 PluginRegistration register_plugins)
    : gateway_(std::move(gateway)),
      metrics_(gateway_->worker_processes),
      services_(*gateway_, clock_, metrics_) {
  if (register_plugins) {
    register_plugins(&plugins_);
  } else {
    RegisterBuiltinPlugins(&plugins_, log_writer_);
  }
  RegisterBuiltinProviders(&providers_);
  // Status first: it is up before the first load, so /status/ready answers 503 while it runs.
  control_services_.push_back(
      std::make_unique<StatusService>(gateway_->status_listen, [this] { return Report(); }));
  auto discovery = std::make_unique<DiscoveryService>(&providers_, gateway_->discovery);
  discovery_ = discovery.get();
  control_services_.push_back(std::move(discovery));
  auto health = std::make_unique<HealthService>();
  health_ = health.get();
  control_services_.push_back(std::move(health));
  const std::vector<std::string>* enabled = gateway_->plugins ? &*gateway_->plugins : nullptr;
  if (enabled == nullptr ||
      std::find(enabled->begin(), enabled->end(), "prometheus") != enabled->end()) {
    const nlohmann::json* attr = gateway_->PluginAttr("prometheus");
    control_services_.push_back(std::make_unique<PrometheusService>(
        attr != nullptr ? *attr : nlohmann::json(), &metrics_,
        [this] {
          // Control thread, like the service: workers_ changes only here.
          ProcessCounters c;
          for (const auto& w : workers_) {
            const proxy::WorkerStats& s = w->stats();
            c.requests += s.requests.load(std::memory_order_relaxed);
            c.accepted += s.accepted.load(std::memory_order_relaxed);
            c.refused += s.refused.load(std::memory_order_relaxed);
            c.active += s.active_connections.load(std::memory_order_relaxed);
            c.in_flight += s.requests_in_flight.load(std::memory_order_relaxed);
          }
          return c;
        },
        [this] {
          const health::HealthChecker* checker = health_->checker();
          return checker != nullptr ? checker->Statuses() : std::vector<health::TargetStatus>{};
        }));
  }
  control_services_.push_back(std::make_unique<ControlApiService>(
      gateway_->control_listen, gateway_->control_configured, ControlApiHooks()));
}

admin::ControlHooks Control::ControlApiHooks() {
  admin::ControlHooks hooks;
  hooks.view = [this] { return view_.get(); };
  hooks.discovery_dump = [this](std::string_view name) { return discovery_->Dump(name); };
  hooks.show_dump_file = [this](std::string_view name) { return discovery_->ShowDumpFile(name); };
  // The checker names an item "/apisix" + its resource key (health::Binding).
  hooks.health_nodes = [this](std::string_view key) -> nlohmann::json {
    const health::HealthChecker* checker = health_ != nullptr ? health_->checker() : nullptr;
    if (checker == nullptr) return nullptr;
    std::optional<std::string> one = checker->OneJson("/apisix" + std::string(key));
    if (!one) return nullptr;
    nlohmann::json info = nlohmann::json::parse(*one, nullptr, /*allow_exceptions=*/false);
    if (info.is_discarded() || !info.contains("nodes")) return nullptr;  // not started yet
    return std::move(info["nodes"]);
  };
  // APISIX reloads its plugins; here the whole config is read and built again (instances
  // whose conf did not change are kept, as in every reload).
  hooks.reload_plugins = [this] {
    if (stopping_) return false;
    Reload("control API", /*force=*/true);
    return true;
  };
  return hooks;
}

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
  uv_fs_event_init(&loop_, &dir_watch_);
  uv_fs_poll_init(&loop_, &poll_);
  uv_timer_init(&loop_, &debounce_timer_);
  uv_timer_init(&loop_, &retire_timer_);
  uv_timer_init(&loop_, &drain_timer_);
  uv_async_init(&loop_, &done_async_, &OnWorkersDone);
  dir_watch_.data = poll_.data = this;
  debounce_timer_.data = retire_timer_.data = drain_timer_.data = done_async_.data = this;

  for (auto& service : control_services_) {
    Status started = service->Start(&loop_);
    if (!started.ok()) {
      spdlog::critical("{}", started.message());
      exit_code_ = 1;
      CloseHandles();
      break;
    }
  }
  if (exit_code_ == 0) {
    // Watching starts before the first read, so a change made during it is not missed.
    StartWatching();
    Reload("startup", /*force=*/true);
  }

  uv_run(&loop_, UV_RUN_DEFAULT);
  if (joiner_.joinable()) joiner_.join();
  workers_.clear();
  services_.StopAll();  // after the workers: no request uses them any more
  retired_.clear();
  current_.reset();
  FlushLogs();
  uv_loop_close(&loop_);
  if (exit_code_ == 0) spdlog::info("turnpike stopped");
  return exit_code_;
}

bool Control::StartServing() {
  if (!current_) {
    // No usable routes file yet (APISIX starts with an empty config too): serve 404s and pick
    // the file up as soon as it becomes valid.
    config::RoutesConfig empty;
    proxy::BuildReport report;
    current_ = proxy::BuildSnapshot(
        {gateway_.get(), &empty, nullptr, ++version_, &plugins_, &metrics_, &clock_}, &report);
    discovery_->Apply(proxy::NodeBindings(*current_));  // none: discovery is ready at once
    health_->Apply(*current_);
  }
  std::vector<std::vector<int>> fds;
  auto close_all = [&fds] {
    for (auto& list : fds) {
      for (int fd : list) close(fd);
    }
  };
  if (!OpenListeners(&fds)) {
    close_all();
    return false;
  }
  std::shared_ptr<const proxy::AccessLog> access_log;
  if (gateway_->enable_access_log && !gateway_->access_log.empty()) {
    auto opened = OpenAccessLog(*gateway_, *log_writer_);
    if (!opened.ok()) {
      spdlog::critical("{}", opened.status().message());
      close_all();
      return false;
    }
    access_log = opened.value();
  }
  // Services run before any worker serves a request that may use them.
  if (Status started = services_.StartAll(plugins_); !started.ok()) {
    spdlog::critical("{}", started.message());
    close_all();
    return false;
  }
  for (size_t i = 0; i < fds.size(); ++i) {
    workers_.push_back(
        std::make_unique<proxy::Worker>(static_cast<int>(i), gateway_, std::move(fds[i])));
    workers_.back()->set_access_log(access_log);
    workers_.back()->Start(current_);
  }
  // After the workers started: threads inherit their creator's nice value.
  LowerControlThreadPriority();
  std::string where;
  for (const auto& l : gateway_->listen) {
    where += (where.empty() ? "" : ", ") + l.ip + ":" + std::to_string(l.port);
  }
  spdlog::info("turnpike {} serving on {} with {} worker(s); routes from {}", TURNPIKE_VERSION,
               where, workers_.size(), gateway_->routes_file);
  return true;
}

void Control::StartWatching() {
  std::filesystem::path path(gateway_->routes_file);
  watch_dir_ = path.has_parent_path() ? path.parent_path().string() : ".";
  watch_name_ = path.filename().string();
  int rc = uv_fs_event_start(&dir_watch_, &OnDirEvent, watch_dir_.c_str(), 0);
  if (rc != 0) {
    spdlog::warn("cannot watch directory {} ({}); checking {} every {} ms instead", watch_dir_,
                 uv_strerror(rc), gateway_->routes_file, kPollIntervalMs);
  }
  // stat() polling follows symlinks, so a ConfigMap swap (new inode) is seen here too.
  uv_fs_poll_start(&poll_, &OnFilePoll, gateway_->routes_file.c_str(), kPollIntervalMs);
}

void Control::OnDirEvent(uv_fs_event_t* handle, const char* filename, int, int status) {
  auto* c = static_cast<Control*>(handle->data);
  if (status < 0) {
    spdlog::warn("watching {}: {}", c->watch_dir_, uv_strerror(status));
    return;
  }
  std::string_view name = filename != nullptr ? filename : "";
  // The file itself (written in place, or renamed over), or a Kubernetes ConfigMap volume
  // swapping its `..data` symlink (`..data_tmp`, `..<timestamp>` come and go with it). Other
  // files in the directory (logs, say) are none of our business.
  if (name.empty() || name == c->watch_name_ || name.starts_with("..")) {
    c->ScheduleReload("file watch");
  }
}

void Control::OnFilePoll(uv_fs_poll_t* handle, int status, const uv_stat_t*,
                         const uv_stat_t* curr) {
  auto* c = static_cast<Control*>(handle->data);
  if (status < 0) {
    spdlog::warn("routes file {}: {}", c->gateway_->routes_file, uv_strerror(status));
    return;
  }
  FileStamp& seen = c->poll_stamp_;
  seen.dev = curr->st_dev;
  seen.ino = curr->st_ino;
  seen.size = curr->st_size;
  seen.mtime_sec = curr->st_mtim.tv_sec;
  seen.mtime_nsec = curr->st_mtim.tv_nsec;
  seen.ctime_sec = curr->st_ctim.tv_sec;
  seen.ctime_nsec = curr->st_ctim.tv_nsec;
  if (c->reload_running_) {
    c->poll_unchecked_ = true;  // FinishReload() compares it with what the reload read
    return;
  }
  if (seen == c->read_stamp_) return;  // the watch saw this version first
  c->ScheduleReload("periodic check");
}

void Control::ScheduleReload(const char* reason) {
  if (stopping_) return;
  uint64_t now = uv_now(&loop_);
  if (debounce_reason_ == nullptr) {
    debounce_reason_ = reason;
    debounce_first_ = now;
  }
  // Each event pushes the reload back, but a burst never holds it off beyond kMaxDebounceMs.
  if (now - debounce_first_ < kMaxDebounceMs ||
      !uv_is_active(reinterpret_cast<uv_handle_t*>(&debounce_timer_))) {
    uv_timer_start(&debounce_timer_, &OnDebounce, kDebounceMs, 0);
  }
}

void Control::OnDebounce(uv_timer_t* t) {
  auto* c = static_cast<Control*>(t->data);
  const char* reason = c->debounce_reason_;
  c->debounce_reason_ = nullptr;
  c->Reload(reason, /*force=*/false);
}

void Control::Reload(const char* reason, bool force) {
  if (stopping_) return;
  if (reload_running_) {
    // Run once more afterwards: the file may have changed after the running job read it.
    if (pending_reason_ == nullptr) pending_reason_ = reason;
    pending_force_ = pending_force_ || force;
    return;
  }
  auto* job = new ReloadJob;
  job->req.data = job;
  job->control = this;
  job->reason = reason;
  job->force = force;
  job->gateway = gateway_;
  job->plugins = &plugins_;
  job->metrics = &metrics_;
  job->clock = &clock_;
  job->previous = current_;
  job->compare = content_known_;
  job->keep_view = gateway_->control_listen.has_value();
  job->previous_hash = content_hash_;
  job->previous_size = content_size_;
  job->version = version_ + 1;
  job->started = Clock::now();
  reload_running_ = true;
  uv_queue_work(
      &loop_, &job->req, [](uv_work_t* req) { static_cast<ReloadJob*>(req->data)->Run(); },
      [](uv_work_t* req, int) {
        auto* j = static_cast<ReloadJob*>(req->data);
        j->control->FinishReload(j);
      });
}

void Control::FinishReload(ReloadJob* job) {
  std::unique_ptr<ReloadJob> owned(job);
  reload_running_ = false;
  if (job->have_stamp) read_stamp_ = job->stamp;
  const std::string& path = gateway_->routes_file;
  switch (job->outcome) {
    case ReloadJob::Outcome::kUnreadable:
      spdlog::error("reload ({}): cannot read {}: {}; keeping config version {}", job->reason, path,
                    job->read_error, version_);
      break;
    case ReloadJob::Outcome::kUnchanged:
      spdlog::debug("reload ({}): {} unchanged (config version {}, {:.1f} ms)", job->reason, path,
                    version_, MsSince(job->started));
      break;
    case ReloadJob::Outcome::kRejected:
      spdlog::error("reload ({}): {} rejected; keeping config version {} ({:.1f} ms)", job->reason,
                    path, version_, MsSince(job->started));
      break;
    case ReloadJob::Outcome::kLoaded: {
      if (stopping_) break;
      version_ = job->version;
      content_known_ = true;
      content_hash_ = job->hash;
      content_size_ = job->size;
      if (current_) retired_.push_back(std::move(current_));
      current_ = std::move(job->snapshot);
      view_ = std::move(job->view);
      // Before the workers see it: slots whose nodes are known already (a resolved name, a
      // watched service) are filled, so no request finds them empty.
      discovery_->Apply(proxy::NodeBindings(*current_));
      health_->Apply(*current_);
      for (auto& w : workers_) w->Publish(current_);
      // warn, as APISIX logs its reloads: visible at the default error_log_level.
      spdlog::warn(
          "config version {} loaded ({}): {} routes, {} upstreams, {} nodes ({} node sets "
          "unchanged), {} plugin instances ({} unchanged), {} errors, in {:.1f} ms (read "
          "{:.1f}, parse {:.1f}, build {:.1f}; {:.1f} ms CPU)",
          version_, job->reason, job->stats.routes, job->stats.upstreams, job->stats.nodes,
          job->stats.reused_node_sets, job->stats.reused_plugins + job->stats.created_plugins,
          job->stats.reused_plugins, job->errors, MsSince(job->started), job->read_ms,
          job->parse_ms, job->build_ms, job->cpu_ms);
      break;
    }
  }
  owned.reset();  // drops the job's pin on the previous snapshot
  ReleaseRetired();
  if (stopping_) {
    if (workers_.empty()) CloseHandles();  // stopped during the first load
    return;
  }
  if (workers_.empty() && !StartServing()) {
    exit_code_ = 1;
    stopping_ = true;
    CloseHandles();
    return;
  }
  if (poll_unchecked_) {
    // The poll saw the file change while the reload ran: unless the reload read that version,
    // read again. Once only, as the poll reports each change once.
    poll_unchecked_ = false;
    if (poll_stamp_ != read_stamp_ && pending_reason_ == nullptr) {
      pending_reason_ = "periodic check";
    }
  }
  if (pending_reason_ != nullptr) {
    const char* reason = pending_reason_;
    bool force = pending_force_;
    pending_reason_ = nullptr;
    pending_force_ = false;
    Reload(reason, force);
  }
}

void Control::ReleaseRetired() {
  // Only this thread holds a retired snapshot whose use count is 1: workers have moved on and
  // no request pins it, and nobody can pin it again.
  for (auto it = retired_.begin(); it != retired_.end();) {
    if (it->use_count() != 1) {
      ++it;
      continue;
    }
    uint64_t version = (*it)->version;
    auto started = Clock::now();
    it->reset();
    spdlog::info("config version {} released ({:.1f} ms)", version, MsSince(started));
    it = retired_.erase(it);
  }
  auto* timer = reinterpret_cast<uv_handle_t*>(&retire_timer_);
  if (retired_.empty()) {
    uv_timer_stop(&retire_timer_);
  } else if (!uv_is_active(timer) && !handles_closed_) {
    uv_timer_start(&retire_timer_, &OnReleaseRetired, 100, 100);
  }
}

void Control::OnReleaseRetired(uv_timer_t* t) { static_cast<Control*>(t->data)->ReleaseRetired(); }

admin::StatusReport Control::Report() const {
  admin::StatusReport r;
  r.workers = static_cast<size_t>(gateway_->worker_processes);
  // The version every worker serves: a new one shows once the last worker has switched to
  // it, so a client that sees it is served by it, whichever worker takes the connection.
  r.config_version = workers_.empty() ? version_ : UINT64_MAX;
  for (const auto& w : workers_) {
    if (w->ready()) ++r.ready_workers;
    r.config_version = std::min<uint64_t>(r.config_version, w->stats().snapshot_version);
  }
  for (const auto& service : control_services_) {
    if (service->ready()) continue;
    if (!r.waiting_for.empty()) r.waiting_for += ", ";
    r.waiting_for += service->name();
  }
  return r;
}

void Control::OnSignal(uv_signal_t* handle, int signum) {
  auto* c = static_cast<Control*>(handle->data);
  if (signum == SIGHUP) {
    c->Reload("SIGHUP", /*force=*/false);
    return;
  }
  c->BeginShutdown(signum);
}

void Control::BeginShutdown(int signum) {
  if (stopping_) {
    spdlog::warn("second signal {}: closing all connections now", signum);
    for (auto& w : workers_) w->Abort();
    return;
  }
  stopping_ = true;
  uv_fs_event_stop(&dir_watch_);
  uv_fs_poll_stop(&poll_);
  uv_timer_stop(&debounce_timer_);
  StopServices();  // like every listener, the status port closes when draining starts
  if (workers_.empty()) {
    spdlog::info("signal {}: stopping during the first config load", signum);
    if (!reload_running_) CloseHandles();  // else FinishReload() does
    return;
  }
  spdlog::info("signal {}: draining (up to {:.1f} s)", signum, gateway_->drain_timeout);
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

void Control::FlushLogs() {
  log_writer_->FlushNow();
  for (const logging::LogWriter::FileStats& f : log_writer_->Stats()) {
    if (f.dropped > 0) {
      spdlog::warn("{}: {} line(s) dropped, written faster than the disk took them", f.path,
                   f.dropped);
    }
    if (f.write_errors > 0) {
      spdlog::warn("{}: {} failed open(s) or write(s)", f.path, f.write_errors);
    }
  }
}

void Control::StopServices() {
  for (auto& service : control_services_) service->Stop();
}

void Control::CloseHandles() {
  if (handles_closed_) return;
  handles_closed_ = true;
  StopServices();
  auto h = [](auto* p) { return reinterpret_cast<uv_handle_t*>(p); };
  for (uv_handle_t* handle :
       {h(&sigterm_), h(&sigint_), h(&sighup_), h(&dir_watch_), h(&poll_), h(&debounce_timer_),
        h(&retire_timer_), h(&drain_timer_), h(&done_async_)}) {
    uv_close(handle, nullptr);
  }
}

}  // namespace turnpike::daemon
