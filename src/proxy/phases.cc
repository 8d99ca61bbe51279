// Plugin phases of ClientConnection: rewrite and access before the upstream, header_filter
// and body_filter on the response (the node's or Turnpike's own), log at the end. Global
// rules run before the route's plugins in every phase.

#include "proxy/client_connection.h"

namespace turnpike::proxy {
namespace {

// Calls fn(plugin) for every plugin implementing `phase`: the global rules' first, then the
// route's, each chain in priority order. Stops (and returns true) when fn returns true.
template <typename Fn>
bool ForEachPlugin(const Snapshot& snap, const Route* route, uint32_t phase, Fn&& fn) {
  auto run = [&](const PluginChain& chain) {
    if ((chain.phases & phase) == 0) return false;
    for (const PluginChain::Entry& e : chain.entries) {
      if ((e.plugin->phases() & phase) != 0 && fn(*e.plugin)) return true;
    }
    return false;
  };
  for (const PluginChain& g : snap.global_rules) {
    if (run(g)) return true;
  }
  return route != nullptr && run(route->chain);
}

}  // namespace

uint32_t ClientConnection::active_phases() const {
  return snapshot_->global_phases | (route_ != nullptr ? route_->chain.phases : 0);
}

bool ClientConnection::RunRequestPhases() {
  uint32_t phases = active_phases();
  phases_ran_ = phases != 0;
  if ((phases & (kPhaseRewrite | kPhaseAccess)) == 0) return false;
  bool answered = ForEachPlugin(*snapshot_, route_, kPhaseRewrite, [&](const Plugin& p) {
    p.Rewrite(ctx_);
    return ctx_.responded();
  });
  if (!answered) {
    answered = ForEachPlugin(*snapshot_, route_, kPhaseAccess, [&](const Plugin& p) {
      p.Access(ctx_);
      return ctx_.responded();
    });
  }
  if (!answered) return false;
  local_body_.assign(ctx_.respond_body());
  SendLocal(ctx_.respond_status(), local_body_, "text/plain; charset=utf-8");
  return true;
}

void ClientConnection::RunHeaderFilters(int status) {
  ctx_.SetStatus(status);
  ForEachPlugin(*snapshot_, route_, kPhaseHeaderFilter, [&](const Plugin& p) {
    p.HeaderFilter(ctx_);
    return false;
  });
  resp_status_ = ctx_.response_status();  // SetResponseStatus may have replaced it
}

bool ClientConnection::body_filters_active() const {
  return (active_phases() & kPhaseBodyFilter) != 0;
}

bool ClientConnection::FilterBody(std::string_view data, bool first, bool last,
                                  std::string* out) {
  BodyPiece piece;
  piece.data = data;
  piece.first = first;
  piece.last = last;
  ForEachPlugin(*snapshot_, route_, kPhaseBodyFilter, [&](const Plugin& p) {
    // Two scratch buffers: a filter's input may be an earlier filter's output, so it gets
    // the buffer its input does not live in (filters that pass a piece through leave it
    // where it was, so plain alternation could hand a filter its own input).
    const std::string& first = filter_scratch_[0];
    auto at = reinterpret_cast<uintptr_t>(piece.data.data());
    auto begin = reinterpret_cast<uintptr_t>(first.data());
    bool in_first = !first.empty() && at >= begin && at <= begin + first.size();
    piece.out = &filter_scratch_[in_first ? 1 : 0];
    p.BodyFilter(ctx_, piece);
    return false;
  });
  out->append(piece.data);
  body_started_ = true;
  return piece.last && !last;
}

void ClientConnection::RunLogPhase() {
  ctx_.SetStatus(resp_status_);
  // out_ still holds the head of the response that went out (proxied or local).
  ctx_.facts().Finish(uv_now(worker_->loop()), bytes_sent_, body_bytes_, out_);
  ForEachPlugin(*snapshot_, route_, kPhaseLog, [&](const Plugin& p) {
    p.Log(ctx_);
    return false;
  });
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
