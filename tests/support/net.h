// Loopback networking helpers for tests: free ports, connecting, polling for readiness.
//
// Everything here talks to 127.0.0.1 only. Sockets are created with SOCK_CLOEXEC so child
// processes started by tests never inherit them.
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace turnpike::testing {

// Binds 127.0.0.1:0, reads the port the kernel picked and closes the socket. The port is
// free at the time of the call; another process may still take it before the caller binds.
// Returns 0 on failure.
int FreePort();

// A listening socket on 127.0.0.1:`port` (0: one the kernel picks), SO_REUSEADDR, backlog 64.
// Returns the fd with `*bound_port` set, or -1.
int ListenLoopback(int port, int* bound_port);

// A port on 127.0.0.1 that refuses connections (for "dead node" upstreams): the socket is
// bound but never listens, so connect() gets a RST and no other process can take the port
// while this object lives. Move-only.
class RefusedPort {
 public:
  RefusedPort();
  ~RefusedPort();
  RefusedPort(RefusedPort&& other) noexcept;
  RefusedPort& operator=(RefusedPort&& other) noexcept;

  int port() const { return port_; }  // 0 if binding failed

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Connects a blocking socket to 127.0.0.1:port within `timeout`. Returns the fd, or -1 with
// `error` (if non-null) describing why (errno text, e.g. "Connection refused").
int ConnectLoopback(int port, std::chrono::milliseconds timeout, std::string* error = nullptr);

// Polls connect() until 127.0.0.1:port accepts or `timeout` passes. `still_trying`, when
// set, is consulted between attempts; returning false stops early (e.g. the server process
// exited). Returns true once a connection was accepted.
bool WaitForPort(int port, std::chrono::milliseconds timeout,
                 const std::function<bool()>& still_trying = {});

// Calls `done` every `interval` until it returns true or `timeout` passes; returns the last
// result. For conditions that can only be observed by asking again (a reloaded route, a port
// that stopped accepting).
bool PollUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout,
               std::chrono::milliseconds interval = std::chrono::milliseconds(10));

}  // namespace turnpike::testing
