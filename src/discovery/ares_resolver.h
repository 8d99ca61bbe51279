// AresResolver: the daemon's Resolver, c-ares driven by the control loop (uv_poll on c-ares'
// sockets, one uv_timer for its retransmission timeouts). Nothing blocks and nothing uses
// libuv's thread pool, so a slow DNS server delays neither reloads nor shutdown (Stop()
// cancels every lookup at once, where a getaddrinfo already running could not be).
//
// /etc/resolv.conf and /etc/hosts are read as c-ares does (hosts file first). Names under
// the special-use `invalid` TLD (RFC 6761 §6.4) fail at once, without any query.
//
// Thread rules: control thread only (the loop given to the constructor).
#pragma once

#include <uv.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "discovery/resolver.h"
#include "turnpike/status.h"

namespace turnpike::discovery {

class AresResolver final : public Resolver {
 public:
  struct Options {
    int timeout_ms = 2000;  // per try
    int tries = 2;
  };

  AresResolver(uv_loop_t* loop, Options options);
  explicit AresResolver(uv_loop_t* loop) : AresResolver(loop, Options{}) {}
  // REQUIRES: Stop() was called and the loop has run its close callbacks (or Start() failed
  // or was never called).
  ~AresResolver() override;
  AresResolver(const AresResolver&) = delete;
  AresResolver& operator=(const AresResolver&) = delete;

  // Reads the system's resolver configuration. After a failed Start(), lookups fail (from the
  // loop); before Start() or after Stop(), they never call back.
  Status Start();
  // Cancels every lookup (no callback runs) and closes the handles. Idempotent. Also
  // REQUIRED after a failed Start().
  void Stop();

  uint64_t Resolve(const std::string& host, Done done) override;
  void Cancel(uint64_t id) override;

  static bool IsSpecialInvalid(const std::string& host);

 private:
  struct Channel;  // c-ares state (ares_resolver.cc)
  struct Query {
    AresResolver* self;
    uint64_t id;
  };

  void Finish(uint64_t id, Resolution result);  // defers `done` to the loop
  void RunDeferred();
  void ArmTimeout();
  void OnSocketState(int fd, bool readable, bool writable);

  uv_loop_t* loop_;
  Options options_;
  std::unique_ptr<Channel> channel_;
  uv_timer_t timeout_timer_{};
  uv_timer_t defer_timer_{};
  bool handles_ = false;  // timers initialised
  bool stopped_ = false;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, Done> pending_;
  std::vector<std::pair<uint64_t, Resolution>> deferred_;
  std::unordered_map<int, uv_poll_t*> polls_;
};

}  // namespace turnpike::discovery
