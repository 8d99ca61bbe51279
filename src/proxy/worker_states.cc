#include "proxy/worker_states.h"

#include <algorithm>
#include <cassert>

namespace turnpike::proxy {

WorkerState* WorkerStateSet::Scan(const Plugin& plugin) const {
  for (const Held& h : by_slot_) {
    if (h.plugin == &plugin) return h.state;
  }
  return nullptr;
}

void WorkerStatePin::Unpin() {
  WorkerStateSet* set = std::exchange(set_, nullptr);
  WorkerStateTable* table = std::exchange(table_, nullptr);
  table->Unpin(set);
}

WorkerStateTable::~WorkerStateTable() {
  Clear();
  // Pins outliving the table would be a bug of the worker (its exchanges go first).
  assert(retired_.empty() && "WorkerStateTable destroyed while requests pin its states");
  while (!retired_.empty()) {
    std::unique_ptr<WorkerStateSet> set = std::move(retired_.back());
    retired_.pop_back();
    Release(set.get());
  }
}

void WorkerStateTable::Reset(const Snapshot& snapshot) {
  auto next = std::make_unique<WorkerStateSet>();
  next->by_slot_.resize(snapshot.worker_state_plugins.size());
  for (size_t i = 0; i < snapshot.worker_state_plugins.size(); ++i) {
    const Plugin* plugin = snapshot.worker_state_plugins[i];
    auto [it, added] = records_.try_emplace(plugin);
    WorkerStateRecord& record = it->second;
    if (added) {  // first snapshot of this worker that contains the instance
      record.state = plugin->CreateWorkerState(env_);
      assert(record.state != nullptr && "CreateWorkerState returned nullptr");
      ++created_;
    }
    ++record.sets;
    next->by_slot_[i] = {plugin, record.state.get(), &record};
  }
  std::unique_ptr<WorkerStateSet> previous = std::move(current_);
  current_ = std::move(next);
  if (previous == nullptr) return;
  if (previous->pins_ == 0) {
    Release(previous.get());
  } else {
    retired_.push_back(std::move(previous));  // released by its last request
  }
}

WorkerStatePin WorkerStateTable::Pin() {
  // A set without states has nothing to keep alive: no pin (the request finds no state).
  if (current_ == nullptr || current_->size() == 0) return {};
  ++current_->pins_;
  return WorkerStatePin(this, current_.get());
}

void WorkerStateTable::Unpin(WorkerStateSet* set) {
  assert(set->pins_ > 0);
  if (--set->pins_ != 0 || set == current_.get()) return;
  auto it = std::find_if(retired_.begin(), retired_.end(),
                         [&](const std::unique_ptr<WorkerStateSet>& s) { return s.get() == set; });
  if (it == retired_.end()) return;
  // Out of the list before any state is destroyed: a destructor may end requests (and so
  // unpin other sets) from inside Release.
  std::unique_ptr<WorkerStateSet> owned = std::move(*it);
  retired_.erase(it);
  Release(owned.get());
}

void WorkerStateTable::Release(WorkerStateSet* set) {
  for (WorkerStateSet::Held& held : set->by_slot_) {
    if (--held.record->sets != 0) continue;
    std::unique_ptr<WorkerState> state = std::move(held.record->state);
    records_.erase(held.plugin);
    if (state != nullptr) ++destroyed_;
    state.reset();  // the map is consistent by now, whatever the destructor does
  }
  set->by_slot_.clear();
}

void WorkerStateTable::Clear() {
  std::unique_ptr<WorkerStateSet> current = std::move(current_);
  if (current == nullptr) return;
  if (current->pins_ == 0) {
    Release(current.get());
  } else {
    retired_.push_back(std::move(current));  // released by its last request
  }
}

}  // namespace turnpike::proxy
