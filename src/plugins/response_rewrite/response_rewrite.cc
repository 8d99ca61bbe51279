#include "plugins/response_rewrite/response_rewrite.h"

#include <algorithm>

#include "turnpike/strings.h"

namespace turnpike::plugins::response_rewrite {
namespace {

// The header value of `op` for this request: the literal itself, or rendered into `buf`.
std::string_view Resolve(const HeaderOp& op, PluginContext& ctx, std::string* buf) {
  if (op.value.is_literal()) return op.value.literal();
  op.value.Render(ctx, buf);
  return *buf;
}

}  // namespace

std::unique_ptr<WorkerState> ResponseRewritePlugin::CreateWorkerState(
    const WorkerEnvironment& /*env*/) const {
  // Sized for the filter with the most groups: no request makes it grow.
  uint32_t pairs = 0;
  for (const Substitution& f : config_.filters) pairs = std::max(pairs, f.pairs());
  return std::make_unique<FilterWorker>(pairs);
}

void ResponseRewritePlugin::HeaderFilter(PluginContext& ctx) const {
  if (config_.vars && !config_.vars->Eval(ctx)) return;
  ResponseRewriteState& state = ctx.RequestState<ResponseRewriteState>(this);
  if (config_.status_code) ctx.SetResponseStatus(*config_.status_code);
  if (config_.body || !config_.filters.empty()) {
    bool pass = false;
    if (!config_.filters.empty()) {
      std::optional<std::string_view> encoding = ctx.ResponseHeader("Content-Encoding");
      pass = encoding && !encoding->empty() && !EqualsIgnoreCase(*encoding, "identity");
    }
    state.rewrite_body = !pass;
    if (!pass) ctx.MarkBodyModified();
  }
  if (config_.add.empty() && config_.set.empty() && config_.remove.empty()) return;
  std::string* buf = &state.header_value;
  for (const HeaderOp& op : config_.add) ctx.AddResponseHeader(op.name, Resolve(op, ctx, buf));
  for (const HeaderOp& op : config_.set) ctx.SetResponseHeader(op.name, Resolve(op, ctx, buf));
  for (const std::string& name : config_.remove) ctx.RemoveResponseHeader(name);
}

void ResponseRewritePlugin::BodyFilter(PluginContext& ctx, BodyPiece& piece) const {
  ResponseRewriteState& state = ctx.RequestState<ResponseRewriteState>(this);
  if (!state.rewrite_body) return;
  if (config_.body) {
    // The whole replacement goes out with the first piece; the node's body ends there
    // (ngx.arg[2] = true).
    piece.data = piece.first ? std::string_view(*config_.body) : std::string_view();
    piece.last = true;
    return;
  }
  // filters: hold the body back until the last piece (or max_resp_body_size bytes).
  MatchBlock* match = &ctx.worker_state<FilterWorker>(*this).match;
  std::string* body = &state.held;
  size_t room = config_.max_resp_body_size - std::min(body->size(), config_.max_resp_body_size);
  if (piece.data.size() < room || (piece.last && piece.data.size() <= room)) {
    body->append(piece.data);
    if (piece.last) {
      RunFilters(match, body, piece);
    } else {
      piece.data = {};
    }
    return;
  }
  // More than max_resp_body_size: the filters see the first max_resp_body_size bytes and the
  // rest passes through as it comes (APISIX also stops holding the body there).
  // The rest is copied aside first: piece.data may view piece.out, which RunFilters reuses.
  state.rest.assign(piece.data.substr(room));
  body->append(piece.data.substr(0, room));
  RunFilters(match, body, piece);
  piece.out->append(state.rest);
  piece.data = *piece.out;
  state.rewrite_body = false;  // what follows passes through
}

void ResponseRewritePlugin::RunFilters(MatchBlock* match, std::string* body,
                                       BodyPiece& piece) const {
  // Each filter reads one buffer and writes the other; the result ends in piece.out.
  std::string* in = body;
  std::string* out = piece.out;
  for (const Substitution& s : config_.filters) {
    s.Apply(*in, match, out);
    std::swap(in, out);
  }
  if (in != piece.out) piece.out->swap(*in);
  piece.data = *piece.out;
}

}  // namespace turnpike::plugins::response_rewrite
