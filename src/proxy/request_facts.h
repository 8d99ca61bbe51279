// RequestFacts: what the proxy learns about a request as it runs — when it started, which
// upstream nodes were tried and how long each took, what went back to the client — and the
// nginx variables made from them ($request_time, $upstream_addr, $bytes_sent, $msec,
// $request_id...).
//
// Owned by a RequestContext (one per client connection); worker thread only. The proxy
// reports events as they happen; lookups render into strings owned here whose capacity is
// reused between requests, so a warm connection allocates nothing. A variable whose facts
// change as the request goes on (upstream_*, bytes_sent, request_time, time_*, msec) is
// re-rendered on each lookup: its previous view is then stale, other variables' views are not.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/time_text.h"
#include "http/message.h"
#include "turnpike/plugin.h"
#include "turnpike/request_vars.h"

namespace turnpike::proxy {

class RequestFacts {
 public:
  static constexpr size_t kMaxAttempts = 8;  // attempts beyond this are not itemised

  // Takes the next connection serial number ($connection) and seeds $request_id.
  RequestFacts();

  // ---- events, reported by the proxy ----
  // The request head (`head_bytes` long) was read at loop time `loop_ms` / wall `wall_ms`.
  void Begin(uint64_t loop_ms, int64_t wall_ms, size_t head_bytes);
  // A node was picked: `ip`, `port`, the Host header it gets.
  void UpstreamAttempt(std::string_view ip, uint16_t port, std::string_view host_header,
                       uint64_t now_ms);
  // The attempt's connection is usable (`reused`: a pooled one, connect time 0).
  void UpstreamConnected(uint64_t now_ms, bool reused);
  // The attempt's response head arrived.
  void UpstreamHeader(int status, uint64_t now_ms);
  // The attempt ended: `status` 502/504 for a failure, 0 for a response read to its end.
  void UpstreamEnd(int status, uint64_t now_ms);
  // Log phase: the exchange is over. `response_head` is the head sent to the client (status
  // line and headers, it must stay valid until the request ends), `bytes_sent` everything
  // written to the client, `request_body_bytes` the body bytes read from it.
  void Finish(uint64_t now_ms, uint64_t bytes_sent, uint64_t request_body_bytes,
              std::string_view response_head);
  // The request body, when something buffered it (must stay valid until the request ends).
  void SetRequestBody(std::string_view body) { request_body_ = body; }

  // ---- reading ----
  // The variables of this class (see BuiltinVar); nullopt for the others and for values that
  // do not exist yet.
  std::optional<std::string_view> Get(BuiltinVar v, const http::RequestHead& req,
                                      bool has_upstream);
  RequestTiming timing() const;
  RequestSizes sizes() const;
  void VisitResponseHeaders(HeaderVisitor& visitor) const;
  uint32_t attempts() const { return attempts_; }

 private:
  struct Attempt {
    uint64_t start = 0;
    uint64_t connected = kNone;
    uint64_t header = kNone;
    uint64_t end = kNone;
    uint16_t status = 0;
  };
  // The node of an attempt, kept as raw parts: $upstream_addr and friends are rendered only
  // when read, so a request whose config never reads them pays a copy of a few bytes.
  struct Peer {
    char ip[46] = {};  // INET6_ADDRSTRLEN
    uint8_t ip_len = 0;
    uint16_t port = 0;
    std::string_view ip_view() const { return {ip, ip_len}; }
  };
  static constexpr uint64_t kNone = UINT64_MAX;
  enum Slot : uint8_t {
    kSlotRequestTime,
    kSlotMsec,
    kSlotTime,
    kSlotConnection,
    kSlotConnectionRequests,
    kSlotRequestId,
    kSlotBytes,
    kSlotBodyBytes,
    kSlotRequestLength,
    kSlotUpstreamStatus,
    kSlotConnectTime,
    kSlotHeaderTime,
    kSlotResponseTime,
    kSlotRequest,
    kSlotUpstreamAddr,
    kSlotBalancerIp,
    kSlotBalancerPort,
    kSlotCount,
  };
  std::string& Slot(enum Slot s) {
    std::string& out = slots_[s];
    out.clear();
    return out;
  }
  std::string_view RenderTimes(enum Slot s, uint64_t Attempt::*field);
  uint64_t NextRandom();

  uint64_t serial_ = 0;
  uint64_t requests_ = 0;
  uint64_t rng_[2] = {};
  bool request_id_made_ = false;
  uint64_t start_loop_ms_ = 0;
  int64_t start_wall_ms_ = 0;
  size_t head_bytes_ = 0;
  bool finished_ = false;
  uint64_t end_ms_ = 0;
  uint64_t bytes_sent_ = 0;
  uint64_t request_body_bytes_ = 0;
  std::string_view response_head_;
  std::string_view request_body_;
  uint32_t attempts_ = 0;
  std::array<Attempt, kMaxAttempts> attempt_{};
  std::array<Peer, kMaxAttempts> peer_{};
  Peer last_peer_;  // the latest attempt's node, itemised or not
  std::string upstream_host_;
  std::array<std::string, kSlotCount> slots_;
  core::TimeText iso_time_{"%Y-%m-%dT%H:%M:%S%z", /*local=*/true};
  core::TimeText log_time_{core::TimeText::kLogTime, /*local=*/true};
};

}  // namespace turnpike::proxy
