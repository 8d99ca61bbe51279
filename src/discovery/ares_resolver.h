// AresResolver: the daemon's Resolver, c-ares driven by the control loop (uv_poll on c-ares'
// sockets, one uv_timer for its retransmission timeouts). Nothing blocks and nothing uses
// libuv's thread pool, so a slow DNS server delays neither reloads nor shutdown (Stop()
// cancels every lookup at once, where a getaddrinfo already running could not be).
//
// /etc/resolv.conf (or Options::resolv_conf, or the name servers of Options::servers) and
// /etc/hosts are read as c-ares does (hosts file first). Names under the special-use
// `invalid` TLD (RFC 6761 §6.4) fail at once, without any query. Query() sends one raw DNS
// query (the dns discovery provider's SRV / A / AAAA / CNAME lookups).
//
// Thread rules: control thread only (the loop given to the constructor).
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
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
    // Name servers, "ip", "ip:port" or "[ipv6]:port" (the dns provider's `servers`); empty:
    // those of `resolv_conf`.
    std::vector<std::string> servers;
    std::string resolv_conf;  // empty: /etc/resolv.conf
  };
  // A raw answer (Query): c-ares' status (ARES_SUCCESS, ARES_ENODATA, ARES_ENOTFOUND,
  // ARES_ECONNREFUSED, ARES_ETIMEOUT...) and, on success, the DNS message as received.
  struct Answer {
    int status = 0;
    std::vector<unsigned char> message;
  };
  using AnswerDone = std::function<void(const Answer&)>;

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
  // Also cancels Query() ids.
  void Cancel(uint64_t id) override;
  // One DNS query of record `type` (ns_t_a, ns_t_srv...) for `name` as given (no search
  // list, no hosts file). Returns its id (never 0); `done` runs once, later, from the loop,
  // unless cancelled (Cancel) or stopped. Cost: one heap copy of the answer.
  uint64_t Query(const std::string& name, int type, AnswerDone done);

  static bool IsSpecialInvalid(const std::string& host);

 private:
  struct Channel;  // c-ares state (ares_resolver.cc)
  struct QueryRef {
    AresResolver* self;
    uint64_t id;
  };

  struct Result {
    Resolution resolution;  // Resolve()
    Answer answer;          // Query()
  };
  using Callback = std::function<void(const Result&)>;
  void Finish(uint64_t id, Result result);  // defers the callback to the loop
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
  std::unordered_map<uint64_t, Callback> pending_;
  std::vector<std::pair<uint64_t, Result>> deferred_;
  std::unordered_map<int, uv_poll_t*> polls_;
};

}  // namespace turnpike::discovery
