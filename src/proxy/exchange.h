// Exchange: the per-request state of a client connection, from the first byte of a request
// head to the end of its response.
//
// Kept apart from ClientConnection so that a connection waiting between keep-alive requests
// costs little memory: the worker lends an Exchange to a connection when a request starts
// and takes it back when the connection goes idle (Worker::TakeExchange / ReturnExchange).
// Strings and vectors keep their capacity across requests, so a warm worker allocates
// nothing per request. Fields are reset by the connection as each request begins.
//
// Worker thread only; owned by the worker's pool or by the one connection it is lent to.
#pragma once

#include <uv.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "http/message.h"
#include "http/parser.h"
#include "http/response_encoder.h"
#include "proxy/phase_runner.h"
#include "proxy/request_context.h"
#include "proxy/snapshot.h"
#include "proxy/worker_states.h"
#include "router/route_table.h"
#include "upstream/round_robin.h"

namespace turnpike::proxy {

class UpstreamConnection;

struct Exchange {
  Exchange() { ctx.SetPhaseRunner(&phases); }
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  RequestContext ctx;
  PhaseRunner phases;              // the plugin chains of this request
  std::string filtered;            // filtered body bytes of the write in flight
  std::string local_body;          // body of a local reply
  bool phases_ran = false;         // rewrite/access ran for this request (log then runs)
  bool in_request_phases = false;  // a rewrite/access hook is running (see ResumeFromPause)
  bool resume_pending = false;     // that hook's pause was resumed before it returned
  uint64_t start_ms = 0;           // loop time the current request's head was complete
  uint64_t bytes_sent = 0;         // bytes written to the client for the current request
  int resp_status = 0;             // status sent for the current request

  http::RequestParser parser;
  http::RequestHead req;
  std::string host;                 // lowercased Host without port (reused buffer)
  std::string uri_scratch;          // normalized path when the raw one is not normal
  std::string_view uri;             // nginx's $uri: the path routes match on
  std::string_view remote_addr;     // client address after real-IP processing
  router::MatchInfo match_info;     // which patterns of the route matched
  SnapshotConstSharedPtr snapshot;  // pinned for the whole exchange
  WorkerStatePin worker_states;     // this worker's plugin states of `snapshot`, pinned with it
  const Route* route = nullptr;
  const Upstream* upstream = nullptr;
  upstream::NodeSetConstSharedPtr nodes;  // upstream's set, pinned when chosen (node_index
                                          // indexes it)
  uint32_t node_index = 0;
  upstream::TriedSet tried;
  uint32_t attempts = 0;
  std::array<uint16_t, 8> attempt_status{};  // upstream status per attempt (502/504/...)
  uint64_t first_attempt_ms = 0;
  UpstreamConnection* up = nullptr;
  // The upstream request on `up`: its encoded head, and the response as parsed (views into
  // up's read buffer).
  std::string up_request_head;
  http::ResponseParser up_parser;
  http::ResponseHead up_head;
  size_t up_scan_pos = 0;  // FindHeadEnd's resume point in the response head
  bool stale_retry_used = false;

  bool request_sent = false;   // some of the request was written to an upstream
  bool req_body_done = false;  // the whole request body was read from the client
  bool body_fed = false;       // streamed body bytes went to an upstream: no retry
                               // (a body read before routing is kept: it can be resent)
  bool body_inflight = false;  // an upstream write refers to the connection's read buffer
  uint64_t body_bytes = 0;     // request body bytes so far (client_max_body_size)
  bool resp_head_parsed = false;
  bool resp_head_sent = false;
  bool resp_done = false;
  // How the client's response body is delimited: kChunked when Turnpike re-chunks it,
  // kUntilClose for an HTTP/1.0 client whose body ends at close.
  http::BodyFraming resp_framing = http::BodyFraming::kContentLength;
  bool resp_chunked() const { return resp_framing == http::BodyFraming::kChunked; }
  bool up_eof_pending = false;  // the node closed while a client write was in flight
  bool up_discard = false;      // the response was cut short: do not pool the node

  // Write scratch (capacity reused between requests: no allocation once warm).
  std::string out;                                     // response head / local reply
  std::vector<std::string_view> spans;                 // body spans from a parser
  std::vector<uv_buf_t> client_bufs;                   // iovecs of the client write in flight
  std::vector<uv_buf_t> up_bufs;                       // iovecs of the upstream write in flight
  std::vector<std::array<char, 20>> resp_chunk_heads;  // "<hex>\r\n" per re-chunked span
  std::vector<std::array<char, 20>> req_chunk_heads;

  // The start of the request body, read before routing (StartReadingBody): decoded bytes,
  // at most client_body_buffer_size + 1. Forwarded before the rest of the stream.
  std::string body_buf;
  bool body_buffered = false;  // body_buf belongs to this request (from the worker pool)
  bool continue_sent = false;  // "100 Continue" went out for this request
  std::array<char, 20> body_buf_chunk_head{};  // "<hex>\r\n" when re-chunking body_buf
};

}  // namespace turnpike::proxy
