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
  return x_->snapshot->global_phases | (x_->route != nullptr ? x_->route->chain.phases : 0);
}

bool ClientConnection::RunRequestPhases() {
  uint32_t phases = active_phases();
  x_->phases_ran = phases != 0;
  if ((phases & (kPhaseRewrite | kPhaseAccess)) == 0) return false;
  bool answered = ForEachPlugin(*x_->snapshot, x_->route, kPhaseRewrite, [&](const Plugin& p) {
    p.Rewrite(x_->ctx);
    return x_->ctx.responded();
  });
  if (!answered) {
    answered = ForEachPlugin(*x_->snapshot, x_->route, kPhaseAccess, [&](const Plugin& p) {
      p.Access(x_->ctx);
      return x_->ctx.responded();
    });
  }
  if (!answered) return false;
  x_->local_body.assign(x_->ctx.respond_body());
  SendLocal(x_->ctx.respond_status(), x_->local_body, "text/plain; charset=utf-8");
  return true;
}

void ClientConnection::RunHeaderFilters(int status) {
  x_->ctx.SetStatus(status);
  ForEachPlugin(*x_->snapshot, x_->route, kPhaseHeaderFilter, [&](const Plugin& p) {
    p.HeaderFilter(x_->ctx);
    return false;
  });
  x_->resp_status = x_->ctx.response_status();  // SetResponseStatus may have replaced it
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
  ForEachPlugin(*x_->snapshot, x_->route, kPhaseBodyFilter, [&](const Plugin& p) {
    // Two scratch buffers: a filter's input may be an earlier filter's output, so it gets
    // the buffer its input does not live in (filters that pass a piece through leave it
    // where it was, so plain alternation could hand a filter its own input).
    const std::string& first = x_->filter_scratch[0];
    auto at = reinterpret_cast<uintptr_t>(piece.data.data());
    auto begin = reinterpret_cast<uintptr_t>(first.data());
    bool in_first = !first.empty() && at >= begin && at <= begin + first.size();
    piece.out = &x_->filter_scratch[in_first ? 1 : 0];
    p.BodyFilter(x_->ctx, piece);
    return false;
  });
  out->append(piece.data);
  x_->body_started = true;
  return piece.last && !last;
}

void ClientConnection::RunLogPhase() {
  x_->ctx.SetStatus(x_->resp_status);
  // out still holds the head of the response that went out (proxied or local).
  x_->ctx.facts().Finish(uv_now(worker_->loop()), x_->bytes_sent, x_->body_bytes, x_->out);
  ForEachPlugin(*x_->snapshot, x_->route, kPhaseLog, [&](const Plugin& p) {
    p.Log(x_->ctx);
    return false;
  });
}

void ClientConnection::AppendResponseEdits(std::string* out) const {
  if (!x_->phases_ran) return;
  x_->ctx.response_edits().ForEachSet([&](std::string_view name, std::string_view value) {
    out->append(name);
    out->append(": ");
    out->append(value);
    out->append("\r\n");
  });
}

}  // namespace turnpike::proxy
