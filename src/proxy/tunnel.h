// Tunnel: the bytes of an upgraded connection (a websocket after "101 Switching Protocols"),
// relayed both ways between the client's connection and the node's, as nginx's
// ngx_http_upstream_process_upgraded.
//
// The exchange starts it once the 101 went to the client, handing over the upstream connection (the
// tunnel becomes its owner; it is closed at the end, never pooled) and forwarding the client
// connection's events (OnClientData, OnClientWritten, OnClientEnd). Nothing is copied: client bytes
// go up from the client connection's read buffer, node bytes down from the upstream connection's;
// bytes already buffered on either side when the tunnel starts (early frames) go first.
//
// Back-pressure: one write per direction is in flight at a time; while it is, the source side stops
// reading once more bytes arrive (reading goes on until then, so a write that completes at once
// costs no epoll_ctl), and its buffered bytes stay put until the write completes.
//
// The end, as nginx: when one side closes (EOF, or an error) and what it sent is flushed to the
// other, or when no byte moved either way for `idle_timeout` seconds (the route's or upstream's
// read timeout), the upstream connection is closed and Callbacks::OnTunnelEnd follows; the exchange
// then runs the log phase and closes the client connection. There is no half-close: the other side
// is not kept open for its answer.
//
// Cost: per transfer one read(2) and one write(2) when the socket takes the bytes at once, and a
// store to move the idle deadline; no allocation. A member of the exchange. Worker thread only.
#pragma once

#include <uv.h>

#include <cstdint>

#include "proxy/upstream_connection.h"

namespace turnpike::proxy {

class DownstreamConnection;

class Tunnel final : UpstreamConnection::Owner {
 public:
  class Callbacks {
   public:
    // The tunnel ended (see above); the upstream connection is closed. Called once, from Start() or
    // any of the event calls; the callee may end the exchange in it.
    virtual void OnTunnelEnd() = 0;

   protected:
    ~Callbacks() = default;
  };

  Tunnel() = default;
  Tunnel(const Tunnel&) = delete;
  Tunnel& operator=(const Tunnel&) = delete;

  // Relays between `down` and `up` until the end. `up` (may be null: the node's connection is gone,
  // the tunnel ends at once) is owned by the tunnel from here on; `up_ended`: the node's side
  // already reported EOF. OnTunnelEnd may run inside this call (nothing to relay and a side already
  // closed), so the caller must not touch the exchange after it.
  void Start(DownstreamConnection* down, UpstreamConnection* up, bool up_ended, double idle_timeout,
             Callbacks* callbacks);

  // ---- the client connection's events, from the exchange ----
  // Bytes were appended to down->unread().
  void OnClientData();
  // The write to the client finished (0, or a libuv error).
  void OnClientWritten(int status);
  // The client closed its side (UV_EOF) or its connection failed; reading is over.
  void OnClientEnd(int status);

  // Closes the upstream connection without a callback (the client connection is closing under the
  // exchange). Idempotent; a tunnel never started is closed already.
  void Close();

  bool active() const { return active_; }
  // A write to the node refers to client bytes in the client connection's read buffer.
  bool client_bytes_inflight() const { return to_node_len_ != 0; }
  // The client closed its side, or a write to it is in flight: at the end, no lingering close then.
  bool client_ended() const { return client_ended_; }
  bool writing_to_client() const { return to_client_len_ != 0; }
  uint64_t bytes_to_client() const { return bytes_to_client_; }
  uint64_t bytes_to_node() const { return bytes_to_node_; }

 private:
  // UpstreamConnection::Owner
  void OnUpstreamConnected(int /*status*/) override {}
  void OnUpstreamData() override;
  void OnUpstreamEof(int status) override;
  void OnUpstreamWritten(int status) override;
  void OnUpstreamTimeout() override;

  // Writes what is buffered on one side to the other, or ends the tunnel when that side ended and
  // nothing of it is left.
  void PumpToNode();
  void PumpToClient();
  void Touch() { up_->ArmTimer(idle_timeout_); }  // a store when the deadline moves later
  void End();

  DownstreamConnection* down_ = nullptr;
  UpstreamConnection* up_ = nullptr;
  Callbacks* callbacks_ = nullptr;
  double idle_timeout_ = 0;
  uv_buf_t to_node_buf_{};
  uv_buf_t to_client_buf_{};
  size_t to_node_len_ = 0;    // client bytes being written to the node (0: none)
  size_t to_client_len_ = 0;  // node bytes being written to the client (0: none)
  uint64_t bytes_to_client_ = 0;
  uint64_t bytes_to_node_ = 0;
  bool active_ = false;
  bool client_ended_ = false;
  bool node_ended_ = false;
};

}  // namespace turnpike::proxy
