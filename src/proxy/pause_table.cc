#include "proxy/pause_table.h"

namespace turnpike::proxy {

PausedRequest PauseTable::Add(Pausable* request) {
  uint32_t slot;
  if (free_.empty()) {
    slot = static_cast<uint32_t>(entries_.size());
    entries_.emplace_back();
  } else {
    slot = free_.back();
    free_.pop_back();
  }
  entries_[slot].request = request;
  ++live_;
  return PausedRequest(this, slot, entries_[slot].generation);
}

PauseTable::Entry* PauseTable::Live(uint32_t slot, uint32_t generation) {
  if (slot >= entries_.size()) return nullptr;
  Entry& e = entries_[slot];
  if (e.request == nullptr || e.generation != generation) return nullptr;
  return &e;
}

void PauseTable::Free(uint32_t slot) {
  Entry& e = entries_[slot];
  e.request = nullptr;
  ++e.generation;  // every handle to this pause is stale from now on
  free_.push_back(slot);
  --live_;
}

void PauseTable::Cancel(const PausedRequest& handle) {
  if (handle.table() != this || Live(handle.slot(), handle.generation()) == nullptr) return;
  Free(handle.slot());
}

PluginContext* PauseTable::Context(uint32_t slot, uint32_t generation) {
  Entry* e = Live(slot, generation);
  return e != nullptr ? &e->request->paused_context() : nullptr;
}

void PauseTable::Resume(uint32_t slot, uint32_t generation) {
  Entry* e = Live(slot, generation);
  if (e == nullptr) return;
  Pausable* request = e->request;
  Free(slot);  // before resuming: the chain may pause again and take a slot
  request->ResumeFromPause();
}

}  // namespace turnpike::proxy
