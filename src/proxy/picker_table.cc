#include "proxy/picker_table.h"

#include <unordered_map>

namespace turnpike::proxy {

void PickerTable::Reset(const Snapshot& snapshot) {
  std::unordered_map<const upstream::NodeSet*, size_t> old_by_set;
  for (size_t i = 0; i < pickers_.size(); ++i) {
    if (pickers_[i] != nullptr && pickers_[i]->built_from() != nullptr) {
      old_by_set.emplace(pickers_[i]->built_from(), i);
    }
  }
  std::vector<std::unique_ptr<upstream::Picker>> pickers(snapshot.upstreams.size());
  upstreams_.assign(snapshot.upstreams.size(), nullptr);
  for (const auto& up : snapshot.upstreams) {
    upstreams_[up->slot] = up.get();
    auto it = old_by_set.find(up->nodes->Peek());
    if (it != old_by_set.end() && pickers_[it->second] != nullptr &&
        pickers_[it->second]->type() == up->balancer) {
      pickers[up->slot] = std::move(pickers_[it->second]);
      // Marks of a health checker the upstream no longer has (its checks were removed or
      // disabled) must not outlive it; a new checker's come with its first snapshot.
      if (up->health == nullptr && pickers[up->slot]->down_source() != nullptr) {
        pickers[up->slot]->set_down(upstream::TriedSet());
      }
    }
  }
  for (auto& dropped : pickers_) {
    if (dropped != nullptr && dropped->leases() != 0) retired_.push_back(std::move(dropped));
  }
  pickers_ = std::move(pickers);
}

void PickerTable::MarkDown(const Upstream& up, upstream::Picker* picker) {
  upstream::HealthSnapshotConstSharedPtr health = up.health->Load();
  if (health == nullptr) {  // a new checker, nothing checked yet: every node is healthy
    if (picker->down_source() != nullptr) picker->set_down(upstream::TriedSet());
    return;
  }
  upstream::MarkDown(*health, *picker->set(), &down_scratch_);
  picker->set_down(down_scratch_, std::move(health));
}

void PickerTable::FreeRetired(upstream::Picker* picker) {
  for (auto it = retired_.begin(); it != retired_.end(); ++it) {
    if (it->get() == picker) {
      retired_.erase(it);
      return;
    }
  }
}

upstream::NodeSetConstSharedPtr PickerTable::CurrentNodes(const Upstream& up) {
  if (!Current(up)) return up.nodes->Load();  // a request of an older snapshot
  std::unique_ptr<upstream::Picker>& picker = pickers_[up.slot];
  if (picker == nullptr) picker = upstream::NewPicker(up.balancer);
  if (picker->built_from() != up.nodes->Peek()) {
    picker->Build(up.nodes->Load());
    ++builds_;
  }
  if (up.health != nullptr) {
    // The first request of the upstream starts its checker (APISIX creates checkers on
    // first use): a relaxed load, a store the first time only.
    up.health->MarkUsed();
    if (picker->down_source() != up.health->Peek()) MarkDown(up, picker.get());
  }
  return picker->set();
}

uint32_t PickerTable::PickNode(const Upstream& up, const upstream::NodeSet& pinned,
                               const upstream::PickRequest& request, upstream::PickLease* lease,
                               const upstream::Picker** used) {
  if (pinned.nodes.size() == 1) return request.tried->Contains(0) ? upstream::Picker::kNone : 0;
  upstream::Picker* picker = Current(up) ? pickers_[up.slot].get() : nullptr;
  if (picker == nullptr || picker->built_from() != &pinned) {
    return upstream::PickUntried(pinned, *request.tried);
  }
  if (used != nullptr) *used = picker;
  const uint32_t index = picker->Pick(request);
  if (index != upstream::Picker::kNone && picker->tracks_attempts()) {
    lease->Take(picker, index, request.now_ms);
  }
  return index;
}

}  // namespace turnpike::proxy
