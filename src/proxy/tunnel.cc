#include "proxy/tunnel.h"

#include <utility>

#include "proxy/downstream_connection.h"

namespace turnpike::proxy {

void Tunnel::Start(DownstreamConnection* down, UpstreamConnection* up, bool up_ended,
                   double idle_timeout, Callbacks* callbacks) {
  down_ = down;
  up_ = up;
  callbacks_ = callbacks;
  idle_timeout_ = idle_timeout;
  to_node_len_ = to_client_len_ = 0;
  bytes_to_client_ = bytes_to_node_ = 0;
  client_ended_ = false;
  node_ended_ = up_ended;
  active_ = true;
  if (up_ == nullptr) {
    End();
    return;
  }
  up_->Attach(this);
  Touch();
  // What either side sent before the switch (the node's first frames behind the 101, a client that
  // did not wait for it) goes first.
  PumpToClient();
  if (active_) PumpToNode();
}

void Tunnel::Close() {
  active_ = false;
  if (up_ != nullptr) std::exchange(up_, nullptr)->Close();  // cancels a write in flight
}

void Tunnel::End() {
  if (!active_) return;
  Close();
  callbacks_->OnTunnelEnd();
}

// ---------------------------------------------------------------- client -> node

void Tunnel::PumpToNode() {
  if (to_node_len_ != 0) return;
  std::string_view in = down_->unread();
  if (in.empty()) {
    if (client_ended_) {
      End();
    } else {
      down_->StartReading();
    }
    return;
  }
  to_node_len_ = in.size();
  to_node_buf_ = core::IoBuf(in);
  up_->Write(&to_node_buf_, 1);  // may complete inside
}

void Tunnel::OnClientData() {
  if (!active_) return;
  Touch();
  if (to_node_len_ != 0) {  // back-pressure: the node has not taken the previous bytes yet
    down_->StopReading();
    return;
  }
  PumpToNode();
}

void Tunnel::OnUpstreamWritten(int status) {
  size_t n = std::exchange(to_node_len_, 0);
  if (!active_) return;
  if (status < 0) {
    End();
    return;
  }
  down_->Consume(n);
  bytes_to_node_ += n;
  Touch();
  PumpToNode();
}

void Tunnel::OnClientEnd(int /*status*/) {
  if (!active_) return;
  client_ended_ = true;  // an error ends it alike: nginx marks both as EOF
  PumpToNode();          // what is still buffered goes up first
}

// ---------------------------------------------------------------- node -> client

void Tunnel::PumpToClient() {
  if (to_client_len_ != 0) return;
  std::string_view in = up_->pending();
  if (in.empty()) {
    if (node_ended_) {
      End();
    } else {
      up_->StartReading();
    }
    return;
  }
  to_client_len_ = in.size();
  to_client_buf_ = core::IoBuf(in);
  up_->set_pinned(true);             // more may be read behind these bytes, not over them
  down_->Write(&to_client_buf_, 1);  // may complete inside
}

void Tunnel::OnUpstreamData() {
  if (!active_) return;
  Touch();
  if (to_client_len_ != 0) {  // back-pressure: the client has not taken the previous bytes yet
    up_->StopReading();
    return;
  }
  PumpToClient();
}

void Tunnel::OnClientWritten(int status) {
  size_t n = std::exchange(to_client_len_, 0);
  if (!active_) return;
  if (status < 0) {
    End();
    return;
  }
  up_->set_pinned(false);
  up_->Consume(n);
  bytes_to_client_ += n;
  Touch();
  PumpToClient();
}

void Tunnel::OnUpstreamEof(int /*status*/) {
  if (!active_) return;
  node_ended_ = true;
  PumpToClient();
}

void Tunnel::OnUpstreamTimeout() { End(); }

}  // namespace turnpike::proxy
