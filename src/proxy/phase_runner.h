// PhaseRunner: runs the plugin phases of one request over its chains, in APISIX's order:
// rewrite -> access before the upstream, header_filter and body_filter on the response (the
// node's or Turnpike's own), log at the end. In every phase the global rules' chains run
// first, then the matched route's chain; each chain is already in priority order.
//
// It knows plugins and chains only, never sockets: the exchange owns one, Begin()s it per
// request and reads what the plugins asked for from the context it passes in. A rewrite or
// access hook that pauses (PhaseResult::kPause) leaves a cursor on the next plugin, so
// Resume() goes on exactly where the chain stopped.
//
// Worker thread only. The chains must outlive the request (the exchange pins its snapshot).
// Body scratch keeps its capacity between requests: no allocation once warm.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "proxy/plugin_registry.h"
#include "proxy/worker_states.h"
#include "turnpike/plugin.h"

namespace turnpike::proxy {

class PhaseRunner {
 public:
  // Starts a request: `global_rules` (with `global_phases`, the union of their phases) run
  // before `route_chain` (nullptr when no route matched). `worker_states`: this worker's
  // states of the chains' snapshot (null: none; the exchange pins them for the request).
  void Begin(std::span<const PluginChain> global_rules, uint32_t global_phases,
             const PluginChain* route_chain, const WorkerStateSet* worker_states = nullptr);
  // Once routing is done (Begin() runs before it for requests answered before routing).
  void SetRouteChain(const PluginChain* route_chain) { route_ = route_chain; }

  // Bit set of PluginPhase: what some plugin of this request implements.
  uint32_t phases() const { return global_phases_ | (route_ != nullptr ? route_->phases : 0); }
  bool has(PluginPhase phase) const { return (phases() & phase) != 0; }

  // rewrite, then access. kRespond: a plugin answered (the rest of both phases is skipped);
  // kPause: a plugin waits for I/O, call Resume() when it is done; kContinue: on to the
  // upstream.
  PhaseResult RunRequestPhases(PluginContext& ctx);
  // After kPause: goes on with the plugin after the one that paused.
  PhaseResult Resume(PluginContext& ctx) { return Run(ctx); }
  // True between a kPause and the Resume() that follows it.
  bool paused() const { return paused_; }

  void RunHeaderFilters(PluginContext& ctx);
  // Runs one body piece through the body filters and appends the result to `out`. Returns
  // true when a filter ended the body early (the rest from upstream is then unwanted).
  bool FilterBody(PluginContext& ctx, std::string_view data, bool first, bool last,
                  std::string* out);
  // A piece went through the body filters already (the next one is not `first`).
  bool body_started() const { return body_started_; }
  void RunLog(PluginContext& ctx);

  // Hot path (PluginContext::worker_state). The worker state of `plugin`: from a hook of
  // that plugin, the slot of the entry whose hook runs (an indexed load); nullptr when the
  // request has no state for it.
  WorkerState* FindWorkerState(const Plugin& plugin) const {
    if (worker_states_ == nullptr) return nullptr;
    uint32_t slot = running_ != nullptr && running_->plugin.get() == &plugin
                        ? running_->worker_state_slot
                        : PluginChain::kNoWorkerState;
    return worker_states_->Find(plugin, slot);
  }

 private:
  // Calls fn(plugin) for every plugin implementing `phase`, global rules first.
  template <typename Fn>
  void ForEach(PluginPhase phase, Fn&& fn);
  size_t chain_count() const { return global_rules_.size() + (route_ != nullptr ? 1 : 0); }
  const PluginChain& chain(size_t i) const {
    return i < global_rules_.size() ? global_rules_[i] : *route_;
  }
  PhaseResult Run(PluginContext& ctx);

  std::span<const PluginChain> global_rules_;
  const WorkerStateSet* worker_states_ = nullptr;
  const PluginChain::Entry* running_ = nullptr;  // the entry whose hook was called last
  uint32_t global_phases_ = 0;
  const PluginChain* route_ = nullptr;
  // The next request-phase plugin to run: phase (0 rewrite, 1 access), chain, entry.
  uint8_t phase_ = 0;
  size_t chain_ = 0;
  size_t entry_ = 0;
  bool paused_ = false;
  bool body_started_ = false;
  std::string scratch_[2];  // body filters alternate between these
};

}  // namespace turnpike::proxy
