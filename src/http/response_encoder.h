// Response heads a proxy sends to its client: the node's response re-encoded (hop-by-hop
// headers and the node's Server dropped, plugins' edits applied, framing re-stated), or a
// response of the proxy's own. Header order: status line, [Date, Content-Type,] Server, the
// node's headers, the plugins' headers, X-APISIX-Upstream-Status, framing, Connection.
//
// Pure functions: no I/O, no allocation once `out` has grown to fit. Any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "http/header_edits.h"
#include "http/message.h"

namespace turnpike::http {

// How the body that follows a response head is delimited for the client.
enum class BodyFraming : uint8_t {
  kNoBody,         // no body (HEAD, 1xx/204/304): no framing header is added
  kContentLength,  // Content-Length: content_length
  kChunked,        // Transfer-Encoding: chunked
  kUntilClose,     // an HTTP/1.0 client: the body ends when the connection closes
};

struct ResponseHeadOptions {
  int status = 200;
  std::string_view reason;             // empty: the standard phrase of `status`
  std::string_view server_line;        // "Server: turnpike/x.y\r\n", or empty
  const HeaderEdits* edits = nullptr;  // plugins' response header edits; may be null
  // X-APISIX-Upstream-Status: the status of every upstream attempt, comma-separated; not
  // sent when empty.
  std::span<const uint16_t> upstream_statuses;
  BodyFraming framing = BodyFraming::kContentLength;
  uint64_t content_length = 0;
  bool keep_alive = true;      // false: Connection: close
  bool http10_client = false;  // keep-alive with an HTTP/1.0 client says so
  // Not empty: a 101 the client gets as the switch to this protocol ("Upgrade: <upgrade>",
  // "Connection: upgrade" instead of keep-alive or close).
  std::string_view upgrade;
};

// Replaces `out` with the head of `node`'s response as the client gets it. With a body, the
// node's Content-Length is dropped and o.framing says the framing instead.
void EncodeProxiedResponseHead(const ResponseHead& node, const ResponseHeadOptions& o,
                               std::string* out);

// Replaces `out` with the head of a response the proxy makes itself (`date`: an HTTP date;
// `content_type` unless a plugin edit sets or removes Content-Type).
void EncodeLocalResponseHead(const ResponseHeadOptions& o, std::string_view date,
                             std::string_view content_type, std::string* out);

}  // namespace turnpike::http
