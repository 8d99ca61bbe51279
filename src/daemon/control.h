// Control: the control thread. Loads config, builds snapshots, owns the workers, watches the
// routes file, handles signals (SIGHUP reload, SIGTERM/SIGINT graceful stop) and hosts the
// control services (control_service.h): the status endpoints, and discovery (node sets fed
// from DNS and providers, published apart from the snapshots).
//
// Reloads: reading, parsing and building a snapshot run on libuv's thread pool, one reload at
// a time, so the control loop (signals, status endpoints) stays responsive while a large file
// loads. A trigger that arrives meanwhile runs once more afterwards. Triggers:
//   - an inotify watch on the routes file's directory (uv_fs_event). Events for the file's
//     own name or a Kubernetes ConfigMap entry (`..data` and friends: the mount swaps a
//     `..data` symlink, so the file itself never changes) are debounced (kDebounceMs after the
//     last event) so one editor save is one reload;
//   - a periodic stat() of the file (uv_fs_poll, kPollIntervalMs), the fallback where inotify
//     is unavailable; it triggers only when the stat differs from the file last read;
//   - SIGHUP.
// The file's content hash (and size) decides: an unchanged file is not parsed again.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "admin/control_api.h"
#include "admin/control_view.h"
#include "admin/status_api.h"
#include "config/specs.h"
#include "core/loop_clock.h"
#include "daemon/control_service.h"
#include "daemon/discovery_service.h"
#include "daemon/health_service.h"
#include "daemon/services.h"
#include "discovery/registry.h"
#include "logging/log_writer.h"
#include "metrics/registry.h"
#include "proxy/plugin_registry.h"
#include "proxy/snapshot.h"
#include "proxy/worker.h"

namespace turnpike::daemon {

class Control {
 public:
  static constexpr uint64_t kDebounceMs = 100;      // quiet time after the last file event
  static constexpr uint64_t kMaxDebounceMs = 1000;  // a stream of events waits at most this
  static constexpr unsigned kPollIntervalMs = 1000;

  // Fills the plugin registry; RegisterBuiltinPlugins (with the log writer) unless a test
  // passes its own.
  using PluginRegistration = std::function<void(proxy::PluginRegistry*)>;

  explicit Control(std::shared_ptr<const config::GatewayConfig> gateway,
                   PluginRegistration register_plugins = nullptr);
  ~Control();

  // Runs until stopped by a signal. Returns the process exit code.
  int Run();

 private:
  // What stat() says about a file; equal stamps mean "the same file, unchanged".
  struct FileStamp {
    uint64_t dev = 0, ino = 0, size = 0;
    int64_t mtime_sec = 0, mtime_nsec = 0, ctime_sec = 0, ctime_nsec = 0;
    bool operator==(const FileStamp&) const = default;
  };
  struct ReloadJob;  // one reload on the thread pool (control.cc)

  static void OnSignal(uv_signal_t* handle, int signum);
  static void OnDirEvent(uv_fs_event_t* handle, const char* filename, int events, int status);
  static void OnFilePoll(uv_fs_poll_t* handle, int status, const uv_stat_t* prev,
                         const uv_stat_t* curr);
  static void OnDebounce(uv_timer_t* t);
  static void OnReleaseRetired(uv_timer_t* t);
  static void OnDrainDeadline(uv_timer_t* t);
  static void OnWorkersDone(uv_async_t* a);

  // After the first load: opens the listeners and starts the workers. False on failure.
  bool StartServing();
  bool OpenListeners(std::vector<std::vector<int>>* per_worker);
  void StartWatching();
  // A file event: reload after kDebounceMs without further events.
  void ScheduleReload(const char* reason);
  // Reads and applies the routes file on the thread pool (or once more after the reload in
  // flight). `force`: reload even if the content hash is unchanged.
  void Reload(const char* reason, bool force);
  void FinishReload(ReloadJob* job);
  // Frees replaced snapshots that no worker or request uses any more, here on the control
  // thread, so a large snapshot's destructor never runs on a worker.
  void ReleaseRetired();
  admin::StatusReport Report() const;
  // What the control API reads (the view, discovery, health checks) and the reload it asks for.
  admin::ControlHooks ControlApiHooks();
  void BeginShutdown(int signum);
  void StopServices();
  // After the workers stopped: writes out the log files and warns about lines they lost.
  void FlushLogs();
  void CloseHandles();

  std::shared_ptr<const config::GatewayConfig> gateway_;
  // The one writer of log files: the access log and file-logger's (shared with the plugin
  // registry's factory). Flushed at the end of Run(), once the workers stopped.
  std::shared_ptr<logging::LogWriter> log_writer_ = std::make_shared<logging::LogWriter>();
  proxy::PluginRegistry plugins_;  // the built-in plugins; read-only after construction
  metrics::Registry metrics_;      // every plugin's metrics, for the life of the process
  // The system clock, read from a worker's loop on a worker thread (core/loop_clock.h).
  Clock& clock_ = core::LoopClock::Instance();
  ServiceHost services_;                   // the plugins' services: started with serving
  discovery::ProviderRegistry providers_;  // the built-in discovery providers; read-only
  uv_loop_t loop_{};
  uv_signal_t sigterm_{}, sigint_{}, sighup_{};
  uv_fs_event_t dir_watch_{};
  uv_fs_poll_t poll_{};
  uv_timer_t debounce_timer_{}, retire_timer_{}, drain_timer_{};
  uv_async_t done_async_{};
  // Started in order before the first load, stopped when shutdown begins; destroyed after
  // the loop has closed their handles.
  std::vector<std::unique_ptr<ControlService>> control_services_;
  DiscoveryService* discovery_ = nullptr;  // one of control_services_
  HealthService* health_ = nullptr;        // one of control_services_
  std::vector<std::unique_ptr<proxy::Worker>> workers_;
  std::thread joiner_;
  int exit_code_ = 0;

  proxy::SnapshotConstSharedPtr current_;
  // The control API's view of the config behind current_ (null while the control API is
  // disabled, or before the first load). Replaced with current_.
  std::unique_ptr<admin::ControlView> view_;
  std::vector<proxy::SnapshotConstSharedPtr> retired_;  // replaced, maybe still in use
  uint64_t version_ = 0;
  uint64_t content_hash_ = 0;  // of the file behind current_ (with content_size_)
  uint64_t content_size_ = 0;
  bool content_known_ = false;   // content_hash_ describes a loaded file
  FileStamp read_stamp_;         // stat of the file last read (loaded, unchanged or rejected)
  FileStamp poll_stamp_;         // stat the periodic check last reported
  bool poll_unchecked_ = false;  // poll_stamp_ arrived while a reload ran

  std::string watch_dir_, watch_name_;  // routes file = watch_dir_/watch_name_
  const char* debounce_reason_ = nullptr;
  uint64_t debounce_first_ = 0;  // uv_now() of the first event of the pending burst
  bool reload_running_ = false;
  const char* pending_reason_ = nullptr;  // a reload was asked for while one was running
  bool pending_force_ = false;
  bool stopping_ = false;
  bool handles_closed_ = false;
};

}  // namespace turnpike::daemon
