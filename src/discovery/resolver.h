// Resolver: asynchronous host name lookups for node sets, on the control loop.
//
// The snapshot build never resolves a name (it used to block on getaddrinfo): the
// discovery::Directory asks a Resolver and publishes the node set when the answer comes.
// Tests inject a fake; the daemon uses AresResolver (c-ares on the control loop).
//
// Thread rules: control thread only. `done` never runs inside Resolve(); it runs once, later,
// on the control loop, unless the lookup is cancelled first.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <string>

namespace turnpike::discovery {

struct Resolution {
  bool ok = false;
  std::string error;        // when !ok, e.g. "Domain name not found"
  sockaddr_storage addr{};  // when ok: the first address (port 0)
  socklen_t addr_len = 0;
  uint32_t ttl_seconds = 0;  // when ok: how long the answer may be cached (0: unknown)
};

class Resolver {
 public:
  using Done = std::function<void(const Resolution&)>;
  virtual ~Resolver() = default;
  // Starts a lookup of `host` (a domain name, not an IP literal). Returns its id (never 0).
  virtual uint64_t Resolve(const std::string& host, Done done) = 0;
  // `done` of lookup `id` will not run. Unknown or finished ids are ignored.
  virtual void Cancel(uint64_t id) = 0;
};

}  // namespace turnpike::discovery
