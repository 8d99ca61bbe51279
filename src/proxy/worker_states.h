// WorkerStates: one worker's plugin worker states (turnpike/worker_state.h), by the slot the
// snapshot gave each instance (Snapshot::worker_state_plugins), as PickerTable keeps pickers
// by Upstream::slot. Worker scope; not thread-safe.
//
// Each adopted snapshot gets a WorkerStateSet: the states of its instances, by slot. Reset()
// carries a state over to the new set when the new snapshot still contains the same instance
// (same pointer), creates the missing ones (Plugin::CreateWorkerState, on this thread), and
// leaves the old set to the requests that pinned it: a set no request pins any more is
// released, and with it the states no newer set holds. So a request finds every state of its
// own snapshot's plugins for as long as it runs (a paused one included), and a state removed
// by a reload is destroyed on this worker as soon as its last request has ended.
//
// Costs: Reset() is off the request path (a hash map over the instances with worker state);
// Pin() and its release are a plain increment and decrement; WorkerStateSet::Find() from the
// plugin's own hook is an indexed load and a pointer compare. No allocation per request.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "proxy/snapshot.h"
#include "turnpike/plugin.h"
#include "turnpike/worker_state.h"

namespace turnpike::proxy {

class WorkerStateTable;

// One instance's state on this worker, shared by the sets that hold the instance.
struct WorkerStateRecord {
  std::unique_ptr<WorkerState> state;
  uint32_t sets = 0;  // live sets holding it
};

// The states of one snapshot on one worker, by Snapshot::worker_state_plugins slot.
class WorkerStateSet {
 public:
  // Hot path. The state of `plugin`: slot `slot` when it holds that instance (the slot of
  // the chain entry whose hook is running), else found by a scan (a call from outside the
  // plugin's own entry). nullptr when `plugin` has no state in this set.
  WorkerState* Find(const Plugin& plugin, uint32_t slot) const {
    if (slot < by_slot_.size() && by_slot_[slot].plugin == &plugin) return by_slot_[slot].state;
    return Scan(plugin);
  }
  size_t size() const { return by_slot_.size(); }

 private:
  friend class WorkerStateTable;
  struct Held {
    const Plugin* plugin = nullptr;
    WorkerState* state = nullptr;
    WorkerStateRecord* record = nullptr;
  };
  WorkerState* Scan(const Plugin& plugin) const;

  std::vector<Held> by_slot_;
  uint32_t pins_ = 0;  // requests in progress that pinned this set
};

// A request's hold on the set of the snapshot it pinned (Exchange::worker_states). Movable,
// not copyable; empty when default-constructed.
class WorkerStatePin {
 public:
  WorkerStatePin() = default;
  WorkerStatePin(WorkerStatePin&& o) noexcept
      : table_(std::exchange(o.table_, nullptr)), set_(std::exchange(o.set_, nullptr)) {}
  WorkerStatePin& operator=(WorkerStatePin&& o) noexcept {
    if (this != &o) {
      reset();
      table_ = std::exchange(o.table_, nullptr);
      set_ = std::exchange(o.set_, nullptr);
    }
    return *this;
  }
  WorkerStatePin(const WorkerStatePin&) = delete;
  WorkerStatePin& operator=(const WorkerStatePin&) = delete;
  ~WorkerStatePin() { reset(); }

  // Inline: most snapshots have no plugin with worker state, and then nothing is pinned.
  void reset() {
    if (set_ != nullptr) Unpin();
  }
  const WorkerStateSet* get() const { return set_; }

 private:
  friend class WorkerStateTable;
  WorkerStatePin(WorkerStateTable* table, WorkerStateSet* set) : table_(table), set_(set) {}
  void Unpin();
  WorkerStateTable* table_ = nullptr;
  WorkerStateSet* set_ = nullptr;
};

class WorkerStateTable {
 public:
  // `env`: the worker's index, count and loop, handed to every CreateWorkerState().
  explicit WorkerStateTable(WorkerEnvironment env) : env_(env) {}
  ~WorkerStateTable();
  WorkerStateTable(const WorkerStateTable&) = delete;
  WorkerStateTable& operator=(const WorkerStateTable&) = delete;

  // Worker, on a new snapshot (off the request path), while the worker still holds the
  // previous one. States of instances `snapshot` still contains are kept, the others stay
  // with the previous set until no request pins it.
  void Reset(const Snapshot& snapshot);

  // Hot path: the current set, for a request of the current snapshot to pin. Empty before
  // the first Reset() and after Clear().
  WorkerStatePin Pin();

  // Worker shutdown, once no request is in progress (every pin released): destroys every
  // state, on the worker's thread, while its loop still runs.
  void Clear();

  // Tests: states created and destroyed so far, and sets still alive (current + retired).
  uint64_t created() const { return created_; }
  uint64_t destroyed() const { return destroyed_; }
  size_t live_sets() const { return (current_ != nullptr ? 1 : 0) + retired_.size(); }

 private:
  friend class WorkerStatePin;
  void Unpin(WorkerStateSet* set);
  void Release(WorkerStateSet* set);  // drops the set's holds; destroys orphaned states

  WorkerEnvironment env_;
  // By instance. A record lives while some live set holds it; its instance is then alive
  // (the worker's snapshot, or the requests pinning an older set, hold it), so its address is
  // never reused for another instance meanwhile.
  std::unordered_map<const Plugin*, WorkerStateRecord> records_;
  std::unique_ptr<WorkerStateSet> current_;
  std::vector<std::unique_ptr<WorkerStateSet>> retired_;  // older sets still pinned
  uint64_t created_ = 0;
  uint64_t destroyed_ = 0;
};

}  // namespace turnpike::proxy
