// The plugin phases of an Exchange: rewrite and access before the upstream, header_filter
// and body_filter on the response (the node's or Turnpike's own), log at the end (then the
// access log). Global rules run before the route's plugins in every phase.

#include "proxy/exchange.h"

namespace turnpike::proxy {

void Exchange::RunRequestPhases(bool resume) {
  if (!resume) {
    phases_.Begin(snapshot_->global_rules, snapshot_->global_phases,
                  route_ != nullptr ? &route_->chain : nullptr, worker_states_.get());
    phases_ran_ = phases_.phases() != 0;
  }
  if ((phases_.phases() & (kPhaseRewrite | kPhaseAccess)) == 0) {  // the common case
    ForwardToUpstream();
    return;
  }
  PhaseResult r;
  for (;;) {
    resume_pending_ = false;
    in_request_phases_ = true;
    r = resume ? phases_.Resume(ctx_) : phases_.RunRequestPhases(ctx_);
    in_request_phases_ = false;
    if (ctx_.responded()) r = PhaseResult::kRespond;
    if (r != PhaseResult::kPause) break;
    if (ctx_.pause_handle().alive()) {
      state_ = State::kPaused;  // until the plugin's Resume() (ResumeFromPause)
      return;
    }
    if (!resume_pending_) {  // kPause without a Pause(): the plugin is broken
      ReplyLocal(500, "");
      return;
    }
    resume = true;  // resumed from inside the hook that paused: go on now
  }
  // A Pause() the hook did not return kPause for is void.
  worker_->pauses().Cancel(ctx_.pause_handle());
  if (r == PhaseResult::kRespond) {
    local_body_.assign(ctx_.respond_body());
    SendLocal(ctx_.respond_status(), local_body_, "text/plain; charset=utf-8");
    return;
  }
  ForwardToUpstream();
}

void Exchange::ResumeFromPause() {
  if (in_request_phases_) {  // Resume() inside the hook that paused
    resume_pending_ = true;
    return;
  }
  if (state_ != State::kPaused) return;
  RunRequestPhases(/*resume=*/true);
}

void Exchange::RunHeaderFilters(int status) {
  ctx_.SetStatus(status);
  phases_.RunHeaderFilters(ctx_);
  resp_status_ = ctx_.response_status();  // SetResponseStatus may have replaced it
}

void Exchange::RunLogPhase() {
  ctx_.SetStatus(resp_status_);
  // out_ still holds the head of the response that went out (proxied or local).
  ctx_.facts().Finish(uv_now(worker_->loop()), bytes_sent_, body_bytes_, out_);
  if (phases_ran_) phases_.RunLog(ctx_);
  // Last, as nginx's log module: the line sees what the plugins' log hooks saw.
  if (const AccessLog* log = worker_->access_log()) log->Log(ctx_, &worker_->log_line());
}

}  // namespace turnpike::proxy
