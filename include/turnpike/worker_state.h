// Worker state: what a plugin instance keeps per worker thread, owned by that worker's loop
// (a connection to Redis through hiredis's libuv adapter, a cache, buffers reused by every
// request of the worker). The shared Plugin stays immutable; each worker has its own state,
// so nothing is locked or shared between workers, and no thread_local or function static is
// needed.
//
//   struct RedisLink final : WorkerState {
//     explicit RedisLink(const WorkerEnvironment& env);  // connects on env.loop
//     ~RedisLink() override;                              // closes; runs on that worker
//     ...
//   };
//   bool has_worker_state() const override { return true; }
//   std::unique_ptr<WorkerState> CreateWorkerState(const WorkerEnvironment& env) const override {
//     return std::make_unique<RedisLink>(env);
//   }
//   // In a phase hook:
//   RedisLink& link = ctx.worker_state<RedisLink>(*this);
//
// Lifetime, per worker and plugin instance (an instance is one PluginConstSharedPtr, shared
// by the snapshots that keep it; an instance is kept across reloads while its route, service,
// global rule or plugin config and its conf, metadata and attributes are unchanged, so a
// reload that does not touch it keeps its states):
//   - Created on the worker's thread when the worker adopts the first snapshot that contains
//     the instance, before that worker runs any request of it.
//   - Kept while the snapshots the worker adopts next still contain the same instance.
//   - Destroyed on the worker's thread once the worker has adopted a snapshot without it and
//     no request of an older snapshot that has it is still in progress on that worker (a
//     paused request keeps the state it waits on), and at the latest when the worker shuts
//     down, while its loop still runs: a destructor may uv_close() its handles (their close
//     callbacks run afterwards).
// So a request finds the state of each plugin of its chains, from its first phase to its last.
//
// Thread and cost: everything here runs on the one worker that owns the state. Looking it up
// from a phase hook is an indexed load (the snapshot numbers the instances that have worker
// state at build, as it numbers upstreams for the balancer pickers).
#pragma once

#include <memory>

// libuv's loop, by name only (a plugin that uses it includes <uv.h>), as in discovery.h.
struct uv_loop_s;
typedef struct uv_loop_s uv_loop_t;  // NOLINT(modernize-use-using): libuv's own spelling

namespace turnpike {

// What CreateWorkerState() knows about the worker. Valid during the call; copy what you keep
// (the loop outlives the state).
struct WorkerEnvironment {
  // 0..worker_count-1: the `worker` argument of Counter::Add, Gauge::Set and
  // Histogram::Observe (metrics.h), so a worker writes only its own metric cells.
  int worker_index = 0;
  int worker_count = 1;
  // The worker's libuv loop: for timers, sockets and adapters such as hiredis's. Only this
  // worker's thread may use it.
  uv_loop_t* loop = nullptr;
};

// Base of a plugin's per-worker state; the plugin derives its own type.
class WorkerState {
 public:
  virtual ~WorkerState() = default;
};

}  // namespace turnpike
