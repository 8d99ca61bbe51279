// PauseTable: the requests of one worker that a plugin has paused (PhaseResult::kPause), by
// slot. A plugin holds a PausedRequest {table, slot, generation}; the generation changes when
// the request resumes or goes away, so a late Resume() from a plugin whose I/O completed
// after the client left finds a stale generation and does nothing.
//
// Worker thread only (one table per worker, living as long as the worker). Slots are reused
// through a free list: no allocation once warm.
#pragma once

#include <cstdint>
#include <vector>

#include "turnpike/plugin.h"

namespace turnpike::proxy {

// What a paused request looks like to the table (the exchange that paused).
class Pausable {
 public:
  virtual PluginContext& paused_context() = 0;
  // The plugin resumed: go on with the chain. Called at most once per pause.
  virtual void ResumeFromPause() = 0;

 protected:
  ~Pausable() = default;
};

class PauseTable final : public PausedRequest::Table {
 public:
  // Registers `request` as paused; the handle is what the plugin gets.
  PausedRequest Add(Pausable* request);
  // The request ends without resuming (client gone, connection closed): the handle goes
  // stale. No-op for a stale handle.
  void Cancel(const PausedRequest& handle);
  size_t paused() const { return live_; }

  // ---- PausedRequest::Table ----
  PluginContext* Context(uint32_t slot, uint32_t generation) override;
  void Resume(uint32_t slot, uint32_t generation) override;

 private:
  struct Entry {
    Pausable* request = nullptr;  // nullptr: free
    uint32_t generation = 0;
  };
  Entry* Live(uint32_t slot, uint32_t generation);
  void Free(uint32_t slot);

  std::vector<Entry> entries_;
  std::vector<uint32_t> free_;
  size_t live_ = 0;
};

}  // namespace turnpike::proxy
