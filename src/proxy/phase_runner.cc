#include "proxy/phase_runner.h"

namespace turnpike::proxy {

void PhaseRunner::Begin(std::span<const PluginChain> global_rules, uint32_t global_phases,
                        const PluginChain* route_chain, const WorkerStateSet* worker_states) {
  global_rules_ = global_rules;
  worker_states_ = worker_states;
  running_ = nullptr;
  global_phases_ = global_phases;
  route_ = route_chain;
  phase_ = 0;
  chain_ = entry_ = 0;
  paused_ = false;
  body_started_ = false;
}

template <typename Fn>
void PhaseRunner::ForEach(PluginPhase phase, Fn&& fn) {
  if ((phases() & phase) == 0) return;
  for (size_t c = 0; c < chain_count(); ++c) {
    const PluginChain& ch = chain(c);
    if ((ch.phases & phase) == 0) continue;
    for (const PluginChain::Entry& e : ch.entries) {
      if ((e.phases & phase) == 0) continue;
      running_ = &e;
      fn(*e.plugin);
    }
  }
}

PhaseResult PhaseRunner::RunRequestPhases(PluginContext& ctx) {
  phase_ = 0;
  chain_ = entry_ = 0;
  paused_ = false;
  if ((phases() & (kPhaseRewrite | kPhaseAccess)) == 0) return PhaseResult::kContinue;
  return Run(ctx);
}

PhaseResult PhaseRunner::Run(PluginContext& ctx) {
  paused_ = false;
  static constexpr PluginPhase kRequestPhases[] = {kPhaseRewrite, kPhaseAccess};
  for (; phase_ < 2; ++phase_, chain_ = 0, entry_ = 0) {
    PluginPhase phase = kRequestPhases[phase_];
    if ((phases() & phase) == 0) continue;
    for (; chain_ < chain_count(); ++chain_, entry_ = 0) {
      const PluginChain& ch = chain(chain_);
      if ((ch.phases & phase) == 0) continue;
      while (entry_ < ch.entries.size()) {
        const PluginChain::Entry& e = ch.entries[entry_++];  // the cursor moves past it first
        if ((e.phases & phase) == 0) continue;
        const Plugin& p = *e.plugin;
        running_ = &e;
        PhaseResult r = phase == kPhaseRewrite ? p.Rewrite(ctx) : p.Access(ctx);
        if (r == PhaseResult::kPause) paused_ = true;
        if (r != PhaseResult::kContinue) return r;
      }
    }
  }
  return PhaseResult::kContinue;
}

void PhaseRunner::RunHeaderFilters(PluginContext& ctx) {
  ForEach(kPhaseHeaderFilter, [&](const Plugin& p) { p.HeaderFilter(ctx); });
}

bool PhaseRunner::FilterBody(PluginContext& ctx, std::string_view data, bool first, bool last,
                             std::string* out) {
  BodyPiece piece;
  piece.data = data;
  piece.first = first;
  piece.last = last;
  ForEach(kPhaseBodyFilter, [&](const Plugin& p) {
    // Two scratch buffers: a filter's input may be an earlier filter's output, so it gets
    // the buffer its input does not live in (filters that pass a piece through leave it
    // where it was, so plain alternation could hand a filter its own input).
    const std::string& s0 = scratch_[0];
    auto at = reinterpret_cast<uintptr_t>(piece.data.data());
    auto begin = reinterpret_cast<uintptr_t>(s0.data());
    bool in_first = !s0.empty() && at >= begin && at <= begin + s0.size();
    piece.out = &scratch_[in_first ? 1 : 0];
    p.BodyFilter(ctx, piece);
  });
  out->append(piece.data);
  body_started_ = true;
  return piece.last && !last;
}

void PhaseRunner::RunLog(PluginContext& ctx) {
  ForEach(kPhaseLog, [&](const Plugin& p) { p.Log(ctx); });
}

}  // namespace turnpike::proxy
