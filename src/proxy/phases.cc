// Plugin phases of ClientConnection: rewrite and access before the upstream, header_filter
// and body_filter on the response (the node's or Turnpike's own), log at the end (then the
// access log). Global rules run before the route's plugins in every phase.

#include "proxy/client_connection.h"

namespace turnpike::proxy {

uint32_t ClientConnection::active_phases() const { return x_->phases.phases(); }

void ClientConnection::RunRequestPhases(bool resume) {
  if (!resume) {
    x_->phases.Begin(x_->snapshot->global_rules, x_->snapshot->global_phases,
                     x_->route != nullptr ? &x_->route->chain : nullptr, x_->worker_states.get());
    x_->phases_ran = x_->phases.phases() != 0;
  }
  if ((x_->phases.phases() & (kPhaseRewrite | kPhaseAccess)) == 0) {  // the common case
    ForwardToUpstream();
    return;
  }
  PhaseResult r;
  for (;;) {
    x_->resume_pending = false;
    x_->in_request_phases = true;
    r = resume ? x_->phases.Resume(x_->ctx) : x_->phases.RunRequestPhases(x_->ctx);
    x_->in_request_phases = false;
    if (x_->ctx.responded()) r = PhaseResult::kRespond;
    if (r != PhaseResult::kPause) break;
    if (x_->ctx.pause_handle().alive()) {
      state_ = State::kPaused;  // until the plugin's Resume() (ResumeFromPause)
      return;
    }
    if (!x_->resume_pending) {  // kPause without a Pause(): the plugin is broken
      ReplyLocal(500, "");
      return;
    }
    resume = true;  // resumed from inside the hook that paused: go on now
  }
  // A Pause() the hook did not return kPause for is void.
  worker_->pauses().Cancel(x_->ctx.pause_handle());
  if (r == PhaseResult::kRespond) {
    x_->local_body.assign(x_->ctx.respond_body());
    SendLocal(x_->ctx.respond_status(), x_->local_body, "text/plain; charset=utf-8");
    return;
  }
  ForwardToUpstream();
}

void ClientConnection::ResumeFromPause() {
  if (x_ == nullptr) return;
  if (x_->in_request_phases) {  // Resume() inside the hook that paused
    x_->resume_pending = true;
    return;
  }
  if (state_ != State::kPaused) return;
  RunRequestPhases(/*resume=*/true);
}

void ClientConnection::RunHeaderFilters(int status) {
  x_->ctx.SetStatus(status);
  x_->phases.RunHeaderFilters(x_->ctx);
  x_->resp_status = x_->ctx.response_status();  // SetResponseStatus may have replaced it
}

bool ClientConnection::body_filters_active() const { return x_->phases.has(kPhaseBodyFilter); }

bool ClientConnection::FilterBody(std::string_view data, bool first, bool last, std::string* out) {
  return x_->phases.FilterBody(x_->ctx, data, first, last, out);
}

void ClientConnection::RunLogPhase() {
  x_->ctx.SetStatus(x_->resp_status);
  // out still holds the head of the response that went out (proxied or local).
  x_->ctx.facts().Finish(uv_now(worker_->loop()), x_->bytes_sent, x_->body_bytes, x_->out);
  if (x_->phases_ran) x_->phases.RunLog(x_->ctx);
  // Last, as nginx's log module: the line sees what the plugins' log hooks saw.
  if (const AccessLog* log = worker_->access_log()) log->Log(x_->ctx, &worker_->log_line());
}

}  // namespace turnpike::proxy
