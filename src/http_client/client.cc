#include "http_client/client.h"

#include <algorithm>

#include "http_client/call.h"

namespace turnpike::http_client {

// ---------------------------------------------------------------- RequestHandle

RequestHandle::RequestHandle(RequestHandle&& o) noexcept : call_(o.call_) {
  o.call_ = nullptr;
  if (call_ != nullptr) call_->handle = this;
}

RequestHandle& RequestHandle::operator=(RequestHandle&& o) noexcept {
  if (this != &o) {
    Cancel();
    call_ = o.call_;
    o.call_ = nullptr;
    if (call_ != nullptr) call_->handle = this;
  }
  return *this;
}

void RequestHandle::Cancel() {
  if (call_ == nullptr) return;
  Call* c = call_;
  call_ = nullptr;
  c->handle = nullptr;
  c->Cancel();
}

// ---------------------------------------------------------------- Client

Client::Client(uv_loop_t* loop, ClientOptions options)
    : loop_(loop),
      options_(options),
      buffers_(options.buffer_size, options.max_idle_per_origin + 2),
      defer_timer_(new uv_timer_t) {
  uv_timer_init(loop_, defer_timer_);
  defer_timer_->data = this;
}

Client::~Client() { Close(); }

void Client::Close() {
  if (closed_) return;
  closed_ = true;
  for (Call* c : std::vector<Call*>(calls_)) {
    if (c->handle != nullptr) c->handle->call_ = nullptr;
    if (c->conn != nullptr) c->conn->call = nullptr;
    delete c;
  }
  calls_.clear();
  deferred_.clear();
  for (Conn* c : conns_) {
    c->ReleaseBuffer();
    c->client = nullptr;  // it frees itself in its close callback, without us
    c->tcp.Close();
  }
  conns_.clear();
  idle_.clear();
  uv_close(reinterpret_cast<uv_handle_t*>(defer_timer_),
           [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
}

RequestHandle Client::Fetch(const Origin& origin, Request request,
                            std::function<void(Result)> on_done) {
  Callbacks cb;
  cb.on_done = std::move(on_done);
  return Fetch(origin, std::move(request), std::move(cb));
}

RequestHandle Client::Fetch(const Origin& origin, Request request, Callbacks callbacks) {
  RequestHandle handle;
  if (closed_) return handle;
  auto* call = new Call(this, origin, std::move(request), std::move(callbacks));
  calls_.push_back(call);
  handle.call_ = call;
  call->handle = &handle;
  in_fetch_ = true;
  if (!EncodeRequestHead(call->request, origin, &call->head_out())) {
    call->deferred_error = Error::kInvalidRequest;
    Defer(call);
  } else {
    Start(call, /*fresh=*/false);
  }
  in_fetch_ = false;
  return handle;  // the move constructor repoints call->handle
}

void Client::Start(Call* call, bool fresh) {
  if (!fresh) {
    if (Conn* idle = TakeIdle(call->origin)) {
      call->Attach(idle);
      call->Send();
      return;
    }
  }
  auto* conn = new Conn(this, call->origin);
  conns_.push_back(conn);
  ++connects_;
  call->Attach(conn);
  int rc = conn->tcp.Connect(reinterpret_cast<const sockaddr*>(&call->origin.addr),
                             call->request.connect_timeout);
  if (rc != 0) {  // delivered from the close callback, never inside Fetch()
    conn->close_error = Error::kConnectFailed;
    conn->close_uv_error = rc;
    conn->tcp.Close();
  }
}

Conn* Client::TakeIdle(const Origin& origin) {
  for (size_t i = idle_.size(); i-- > 0;) {
    Conn* c = idle_[i];
    if (c->origin == origin) {
      idle_.erase(idle_.begin() + static_cast<long>(i));
      return c;
    }
  }
  return nullptr;
}

void Client::PutIdle(Conn* conn) {
  size_t same = 0;
  for (Conn* c : idle_) same += c->origin == conn->origin ? 1 : 0;
  if (same >= options_.max_idle_per_origin) {
    conn->tcp.Close();
    return;
  }
  idle_.push_back(conn);
  conn->tcp.ArmTimer(options_.idle_timeout);
  conn->tcp.StartReading();  // a byte or EOF from the server closes it
}

void Client::RemoveIdle(Conn* conn) {
  idle_.erase(std::remove(idle_.begin(), idle_.end(), conn), idle_.end());
}

void Client::Forget(Conn* conn) {
  RemoveIdle(conn);
  conns_.erase(std::remove(conns_.begin(), conns_.end(), conn), conns_.end());
}

void Client::Forget(Call* call) {
  calls_.erase(std::remove(calls_.begin(), calls_.end(), call), calls_.end());
  deferred_.erase(std::remove(deferred_.begin(), deferred_.end(), call), deferred_.end());
}

void Client::Defer(Call* call) {
  deferred_.push_back(call);
  uv_timer_start(defer_timer_, &OnDeferred, 0, 0);
}

void Client::OnDeferred(uv_timer_t* t) {
  auto* self = static_cast<Client*>(t->data);
  if (self->deferred_.empty()) return;
  Call* c = self->deferred_.front();
  self->deferred_.erase(self->deferred_.begin());
  if (!self->deferred_.empty()) uv_timer_start(t, &OnDeferred, 0, 0);  // one per iteration
  c->Finish(c->deferred_error, 0);  // may destroy the client: nothing touches it after
}

}  // namespace turnpike::http_client
