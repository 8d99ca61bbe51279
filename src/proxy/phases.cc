// Plugin phases of ClientConnection: rewrite and access before the upstream, header_filter
// and body_filter on the response (the node's or Turnpike's own), log at the end. Global
// rules run before the route's plugins in every phase.

#include "proxy/client_connection.h"

namespace turnpike::proxy {

bool ClientConnection::RunRequestPhases() {
  uint32_t phases = snapshot_->global_phases | (route_ != nullptr ? route_->chain.phases : 0);
  phases_ran_ = phases != 0;
  if ((phases & (kPhaseRewrite | kPhaseAccess)) == 0) return false;
  for (uint32_t phase : {kPhaseRewrite, kPhaseAccess}) {
    auto run = [&](const PluginChain& chain) {
      if ((chain.phases & phase) == 0) return false;
      for (const PluginChain::Entry& e : chain.entries) {
        if ((e.plugin->phases() & phase) == 0) continue;
        if (phase == kPhaseRewrite) {
          e.plugin->Rewrite(ctx_);
        } else {
          e.plugin->Access(ctx_);
        }
        if (ctx_.responded()) return true;
      }
      return false;
    };
    bool answered = false;
    for (const PluginChain& g : snapshot_->global_rules) {
      if ((answered = run(g))) break;
    }
    if (!answered && route_ != nullptr) answered = run(route_->chain);
    if (answered) {
      local_body_.assign(ctx_.respond_body());
      SendLocal(ctx_.respond_status(), local_body_, "text/plain; charset=utf-8");
      return true;
    }
  }
  return false;
}

void ClientConnection::RunHeaderFilters(int status) {
  ctx_.SetStatus(status);
  auto run = [&](const PluginChain& chain) {
    if ((chain.phases & kPhaseHeaderFilter) == 0) return;
    for (const PluginChain::Entry& e : chain.entries) {
      if (e.plugin->phases() & kPhaseHeaderFilter) e.plugin->HeaderFilter(ctx_);
    }
  };
  for (const PluginChain& g : snapshot_->global_rules) run(g);
  if (route_ != nullptr) run(route_->chain);
}

bool ClientConnection::body_filters_active() const {
  uint32_t phases = snapshot_->global_phases | (route_ != nullptr ? route_->chain.phases : 0);
  return (phases & kPhaseBodyFilter) != 0;
}

bool ClientConnection::FilterBody(std::string_view data, bool first, bool last,
                                  std::string* out) {
  BodyPiece piece;
  piece.data = data;
  piece.first = first;
  piece.last = last;
  size_t n = 0;
  auto run = [&](const PluginChain& chain) {
    if ((chain.phases & kPhaseBodyFilter) == 0) return;
    for (const PluginChain::Entry& e : chain.entries) {
      if ((e.plugin->phases() & kPhaseBodyFilter) == 0) continue;
      // Alternate scratch buffers: a filter may read the previous filter's output.
      piece.out = &filter_scratch_[n++ % 2];
      e.plugin->BodyFilter(ctx_, piece);
    }
  };
  for (const PluginChain& g : snapshot_->global_rules) run(g);
  if (route_ != nullptr) run(route_->chain);
  out->append(piece.data);
  body_started_ = true;
  return piece.last && !last;
}

void ClientConnection::RunLogPhase() {
  ctx_.SetStatus(resp_status_);
  auto run = [&](const PluginChain& chain) {
    if ((chain.phases & kPhaseLog) == 0) return;
    for (const PluginChain::Entry& e : chain.entries) {
      if (e.plugin->phases() & kPhaseLog) e.plugin->Log(ctx_);
    }
  };
  for (const PluginChain& g : snapshot_->global_rules) run(g);
  if (route_ != nullptr) run(route_->chain);
}

void ClientConnection::AppendResponseEdits(std::string* out) const {
  if (!phases_ran_) return;
  ctx_.response_edits().ForEachSet([&](std::string_view name, std::string_view value) {
    out->append(name);
    out->append(": ");
    out->append(value);
    out->append("\r\n");
  });
}

}  // namespace turnpike::proxy
