// Listening sockets for the workers.
#pragma once

#include <string>

#include "turnpike/status.h"

namespace turnpike::core {

struct ListenOptions {
  std::string ip = "0.0.0.0";  // IPv4 or IPv6 literal
  int port = 9080;
  bool reuseport = true;       // SO_REUSEPORT: one socket per worker, kernel balances accepts
  int backlog = 511;
};

// Creates, binds and listens a non-blocking TCP socket. IPv6 sockets are v6-only, so `[::]`
// and `0.0.0.0` can be bound side by side. Control thread. The caller owns the fd.
StatusOr<int> CreateListenSocket(const ListenOptions& options);

// The port a bound socket listens on (useful when port 0 was requested).
int LocalPort(int fd);

}  // namespace turnpike::core
