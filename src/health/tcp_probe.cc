#include "health/tcp_probe.h"

#include <cmath>

namespace turnpike::health {

TcpProbe* TcpProbe::Start(uv_loop_t* loop, const sockaddr* addr, double timeout_s, Done done,
                          upstream::Outcome* outcome) {
  auto* p = new TcpProbe();
  p->done_ = std::move(done);
  uv_tcp_init(loop, &p->tcp_);
  uv_timer_init(loop, &p->timer_);
  p->tcp_.data = p->timer_.data = p->connect_.data = p;
  p->open_handles_ = 2;
  int rc = uv_tcp_connect(&p->connect_, &p->tcp_, addr, [](uv_connect_t* req, int status) {
    auto* self = static_cast<TcpProbe*>(req->data);
    if (status == UV_ECANCELED || self->closing_) return;  // timed out or cancelled
    self->Finish(status == 0 ? upstream::Outcome::kSuccess : upstream::Outcome::kTcpFailure);
  });
  if (rc != 0) {
    *outcome = rc == UV_ETIMEDOUT ? upstream::Outcome::kTimeout : upstream::Outcome::kTcpFailure;
    p->done_ = nullptr;
    p->Close();
    return nullptr;
  }
  const auto ms = static_cast<uint64_t>(std::ceil(timeout_s * 1000));
  uv_timer_start(
      &p->timer_,
      [](uv_timer_t* t) { static_cast<TcpProbe*>(t->data)->Finish(upstream::Outcome::kTimeout); },
      ms, 0);
  return p;
}

void TcpProbe::Finish(upstream::Outcome outcome) {
  Done done = std::move(done_);
  done_ = nullptr;
  Close();
  if (done) done(outcome);  // may free the owner: nothing of it is touched afterwards
}

void TcpProbe::Cancel() {
  done_ = nullptr;
  Close();
}

void TcpProbe::Close() {
  if (closing_) return;
  closing_ = true;
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_),
           OnClosed);  // cancels the connect
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), OnClosed);
}

void TcpProbe::OnClosed(uv_handle_t* h) {
  auto* self = static_cast<TcpProbe*>(h->data);
  if (--self->open_handles_ == 0) delete self;
}

}  // namespace turnpike::health
