#include "core/lazy_timer.h"

namespace turnpike::core {

void LazyTimer::Init(uv_loop_t* loop, void* owner, ExpireFn on_expire) {
  uv_timer_init(loop, &timer_);
  timer_.data = this;
  owner_ = owner;
  on_expire_ = on_expire;
}

void LazyTimer::Start() {
  due_ = deadline_;
  uint64_t now = uv_now(timer_.loop);
  uv_timer_start(&timer_, &OnTimer, deadline_ > now ? deadline_ - now : 0, 0);
}

void LazyTimer::Close(uv_close_cb cb) {
  deadline_ = due_ = 0;
  timer_.data = owner_;
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), cb);
}

void LazyTimer::OnTimer(uv_timer_t* t) {
  auto* self = static_cast<LazyTimer*>(t->data);
  self->due_ = 0;
  if (self->deadline_ == 0) return;
  uint64_t now = uv_now(t->loop);
  if (now < self->deadline_) {
    self->due_ = self->deadline_;
    uv_timer_start(t, &OnTimer, self->deadline_ - now, 0);
    return;
  }
  self->deadline_ = 0;
  self->on_expire_(self->owner_);
}

}  // namespace turnpike::core
