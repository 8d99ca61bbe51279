// Control: the control thread. Loads config, builds snapshots, owns the workers, watches the
// routes file and handles signals (SIGHUP reload, SIGTERM/SIGINT graceful stop).
#pragma once

#include <uv.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "config/specs.h"
#include "proxy/snapshot.h"
#include "proxy/worker.h"

namespace turnpike::daemon {

class Control {
 public:
  explicit Control(std::shared_ptr<const config::GatewayConfig> gateway);
  ~Control();

  // Runs until stopped by a signal. Returns the process exit code.
  int Run();

 private:
  static void OnSignal(uv_signal_t* handle, int signum);
  static void OnFilePoll(uv_fs_poll_t* handle, int status, const uv_stat_t* prev,
                         const uv_stat_t* curr);
  static void OnDrainDeadline(uv_timer_t* t);
  static void OnWorkersDone(uv_async_t* a);

  bool OpenListeners(std::vector<std::vector<int>>* per_worker);
  // Reads and applies the routes file. `force`: reload even if the content hash is unchanged.
  void Reload(const char* reason, bool force);
  void BeginShutdown(int signum);
  void CloseHandles();

  std::shared_ptr<const config::GatewayConfig> gateway_;
  uv_loop_t loop_{};
  uv_signal_t sigterm_{}, sigint_{}, sighup_{};
  uv_fs_poll_t poll_{};
  uv_timer_t drain_timer_{};
  uv_async_t done_async_{};
  std::vector<std::unique_ptr<proxy::Worker>> workers_;
  std::thread joiner_;
  proxy::SnapshotConstSharedPtr current_;
  uint64_t version_ = 0;
  size_t content_hash_ = 0;
  bool stopping_ = false;
};

}  // namespace turnpike::daemon
