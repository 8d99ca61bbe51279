// Worker: one thread, one libuv loop, its own SO_REUSEPORT listeners, client connections,
// upstream keep-alive pools, balancer pickers and the plugins' worker states.
//
// Thread rules: the public methods marked "any thread" may be called from the control
// thread; everything else runs on the worker's own loop. The worker reads config only from
// the snapshots it is handed (latest wins) and never blocks.
#pragma once

#include <uv.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "config/specs.h"
#include "core/buffer_pool.h"
#include "core/snapshot_slot.h"
#include "core/time_text.h"
#include "core/write_batch.h"
#include "proxy/access_log.h"
#include "proxy/idle_pool.h"
#include "proxy/pause_table.h"
#include "proxy/picker_table.h"
#include "proxy/snapshot.h"
#include "proxy/worker_states.h"
#include "upstream/balancer.h"

namespace turnpike::proxy {

class DownstreamConnection;
class UpstreamConnection;
class Exchange;

// Per-worker counters (read by tests and, later, metrics). Relaxed atomics: written by the
// worker only.
struct WorkerStats {
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> refused{0};  // over worker_connections: accepted and closed at once
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> requests_in_flight{0};  // head read, not ended yet (prometheus' writing)
  std::atomic<uint64_t> active_connections{0};
  std::atomic<uint64_t> upstream_connects{0};
  std::atomic<uint64_t> snapshot_version{0};
};

class Worker {
 public:
  // `listen_fds`: listening sockets this worker accepts on (the worker takes ownership).
  Worker(int index, std::shared_ptr<const config::GatewayConfig> gateway,
         std::vector<int> listen_fds);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Before Start(): log every finished request to `log` (shared by all workers).
  void set_access_log(std::shared_ptr<const AccessLog> log) { access_log_ = std::move(log); }

  // Any thread. Starts the thread; it serves once it has a snapshot.
  void Start(SnapshotConstSharedPtr initial);
  // Any thread. Hands over a new snapshot; the worker switches to it on its loop.
  void Publish(SnapshotConstSharedPtr snapshot);
  // Any thread. Stops accepting; in-flight requests finish, idle connections close; the loop
  // ends when no connection is left.
  void Drain();
  // Any thread. Closes every connection now (after a drain deadline passed).
  void Abort();
  // Any thread. Waits for the thread to end.
  void Join();
  // Any thread: has the worker loaded its first snapshot?
  bool ready() const { return ready_.load(std::memory_order_acquire); }
  const WorkerStats& stats() const { return stats_; }

  // This worker's index, 0..worker_processes-1 (metric cells, passive health reports).
  int index() const { return index_; }

  // ---- worker thread only (used by connections) ----
  uv_loop_t* loop() { return &loop_; }
  const config::GatewayConfig& gateway() const { return *gateway_; }
  const SnapshotConstSharedPtr& snapshot() const { return snapshot_; }
  bool draining() const { return draining_; }
  std::string_view Date();
  const AccessLog* access_log() const { return access_log_.get(); }
  std::string& log_line() { return log_line_; }  // scratch buffer for access-log lines
  // Buffers for request bodies read before routing (post_arg_*): taken for one request and
  // given back at its end, so their capacity is reused (no allocation once warm).
  std::string TakeBodyBuffer();
  void ReturnBodyBuffer(std::string buffer);
  std::string_view server_header() const { return server_header_; }  // "Server: ...\r\n"
  WorkerStats& mutable_stats() { return stats_; }

  // What connections borrow while they have a request in progress (see core/buffer_pool.h
  // and proxy/exchange.h): an idle keep-alive connection holds none of it. Up to
  // kMaxIdleLent of each are kept for reuse, so a warm worker allocates nothing per request.
  static constexpr size_t kClientBufferSize = 16 * 1024;
  static constexpr size_t kUpstreamBufferSize = 32 * 1024;
  static constexpr size_t kMaxIdleLent = 1024;
  core::BufferPool& client_buffers() { return client_buffers_; }
  core::BufferPool& upstream_buffers() { return upstream_buffers_; }
  Exchange* TakeExchange();
  // Takes `x` back (true), or leaves it with its connection when kMaxIdleLent are idle
  // already (false): an exchange is never freed while code up the stack may still use it.
  // The caller has dropped its snapshot pin, upstream connection and body buffer.
  bool ReturnExchange(Exchange* x);

  // Requests a plugin paused, waiting for its I/O (PluginContext::Pause).
  PauseTable& pauses() { return pauses_; }
  // The plugins' states on this worker (turnpike/worker_state.h), for the snapshot(): a
  // request pins them with its snapshot (WorkerStateTable::Pin).
  WorkerStateTable& worker_states() { return worker_states_; }

  // Hot path. The current node set of `up`, for the request to pin (copying it is the one
  // refcount a request pays for its nodes). Checks the upstream's slot with one atomic load
  // and a pointer compare; only when the set changed (a provider or the resolver published
  // one, or `up` is new) does it rebuild this upstream's picker, nothing else. An upstream of
  // an older snapshot than snapshot() (a request that pinned it before a reload) gets its
  // slot's set and picks by a scan (PickerTable::CurrentNodes).
  upstream::NodeSetConstSharedPtr CurrentNodes(const Upstream& up) {
    return pickers_.CurrentNodes(up);
  }
  // Hot path. Picks a node of `pinned` (what CurrentNodes returned for the request) not in
  // `*request.tried`; returns its index or upstream::Picker::kNone. Uses the upstream's
  // picker, or, when the set changed since the request pinned it, a plain scan of `pinned`.
  // Opens `lease` for pickers that follow attempts: the caller ends it with EndAttempt()
  // (PickerTable::PickNode).
  //
  // After a first attempt's pick from a set of kPrefetchNodes nodes or more, starts loading
  // what the next picks will touch (PrefetchNextPicks).
  uint32_t PickNode(const Upstream& up, const upstream::NodeSet& pinned,
                    const upstream::PickRequest& request, upstream::PickLease* lease) {
    if (pinned.nodes.size() < kPrefetchNodes || request.tried->count() != 0) {
      return pickers_.PickNode(up, pinned, request, lease);
    }
    const upstream::Picker* picker = nullptr;
    const uint32_t index = pickers_.PickNode(up, pinned, request, lease, &picker);
    if (picker != nullptr) PrefetchNextPicks(*picker, pinned);
    return index;
  }
  // Sets whose nodes, pool slots and idle connections outgrow a core's L2 (~1 KB of them per
  // node, so 256 nodes take ~256 KB); smaller ones stay cached, and the prefetch would cost
  // more than it hides.
  static constexpr size_t kPrefetchNodes = 256;
  // Hot path. The attempt of `lease` (if open) ended now; `final`: the request's last.
  void EndAttempt(upstream::PickLease* lease, bool final) {
    if (lease->open()) pickers_.EndAttempt(lease, uv_now(&loop_), final);
  }

  // Upstream keep-alive pool (proxy/idle_pool.h: a flat table by node address, idle
  // connections in intrusive lists). Hot path, O(1) expected, no allocation once the table
  // has room for the addresses in use.
  // The idle connection to `addr` put back last, taken out of the pool; null if none.
  UpstreamConnection* TakeIdle(const PoolAddr& addr);
  // Returns true when kept (the pool then owns it), false when the caller must close it: the
  // worker drains, the connection is closing, or its address has `pool_size` idle already.
  bool PutIdle(UpstreamConnection* conn, size_t pool_size, double idle_timeout);
  // Takes `conn` out of the pool if it is idle there.
  void RemoveIdle(UpstreamConnection* conn);
  // Addresses with an entry in the pool: only while some connection to the address is idle,
  // or open since the entry was made (tests; on the worker's thread or after Join()).
  size_t pooled_addresses() const { return idle_.addresses(); }

  void OnClientClosed(DownstreamConnection* conn);
  void OnUpstreamOpened() { ++upstream_live_; }
  void OnUpstreamClosed(UpstreamConnection* conn);

 private:
  static void OnAsync(uv_async_t* handle);
  static void OnConnection(uv_stream_t* server, int status);
  void Run();
  void ApplySnapshot(SnapshotConstSharedPtr next);
  void BeginDrain();
  void CloseAll();
  void MaybeFinish();

  // Hot path. Starts loading what the next picks from `picker` (built from `pinned`) will
  // touch: nodes, pool slots, idle connections (proxy/pick_prefetch.h).
  void PrefetchNextPicks(const upstream::Picker& picker, const upstream::NodeSet& pinned);

  int index_;
  std::shared_ptr<const config::GatewayConfig> gateway_;
  std::vector<int> listen_fds_;
  uv_loop_t loop_{};
  uv_async_t async_{};
  // The loop turn's socket writes, sent after its last I/O callback (core/write_batch.h).
  core::WriteBatch write_batch_;
  std::vector<std::unique_ptr<uv_tcp_t>> listeners_;
  std::thread thread_;

  // Control -> worker messages.
  core::SnapshotSlot<Snapshot> slot_;
  std::atomic<bool> drain_requested_{false};
  std::atomic<bool> abort_requested_{false};
  std::atomic<bool> ready_{false};

  // Worker-owned state.
  SnapshotConstSharedPtr snapshot_;
  PickerTable pickers_;  // by Upstream::slot of snapshot_
  // By Snapshot::worker_state_plugins slot of snapshot_ (and older sets still pinned). Before
  // the exchanges, whose pins must go first.
  WorkerStateTable worker_states_;
  IdlePool idle_;  // idle upstream connections (UpstreamConnection is a PoolHook)
  std::vector<DownstreamConnection*> clients_;  // live client connections (for drain)
  size_t upstream_live_ = 0;                    // upstream connections not yet closed
  bool draining_ = false;
  bool finished_ = false;
  core::TimeText date_{core::TimeText::kHttpDate, /*local=*/false};
  std::shared_ptr<const AccessLog> access_log_;
  std::string log_line_;
  std::vector<std::string> body_buffers_;  // idle body buffers (bounded, see ReturnBodyBuffer)
  core::BufferPool client_buffers_{kClientBufferSize, kMaxIdleLent};
  core::BufferPool upstream_buffers_{kUpstreamBufferSize, kMaxIdleLent};
  std::vector<std::unique_ptr<Exchange>> idle_exchanges_;
  std::string server_header_;
  PauseTable pauses_;
  WorkerStats stats_;
};

}  // namespace turnpike::proxy
