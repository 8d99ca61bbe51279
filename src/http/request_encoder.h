// EncodeForwardedRequestHead: the head of a request a proxy sends upstream, from the head the
// client sent and what the proxy decided (reference §3.2, nginx's proxy module): origin-form
// target, HTTP/1.1, the chosen Host, the client's headers minus hop-by-hop ones, minus those
// a plugin replaced, minus the ones the proxy sets itself (X-Real-IP, X-Forwarded-*,
// Forwarded, Expect, Content-Length), then X-Real-IP, X-Forwarded-For/Proto/Host/Port, the
// plugins' headers, and the framing of the body as the client sent it.
//
// What plugins hand in (method, target, a plugin's host, header names and values) is written
// with control bytes (< 0x20, 0x7f) as %XX, and spaces in the method and target too: no plugin
// and no template can add a line or change the request line's shape. Plugin
// headers the proxy owns are not sent as such: Content-Length, Transfer-Encoding, Connection
// and the other hop-by-hop headers, Host and X-Real-IP never; X-Forwarded-Proto/Host/Port
// replace the proxy's own values; an X-Forwarded-For set (or added) by a plugin is the chain,
// followed by ", <client address>" as always.
//
// Pure function: no I/O, no allocation once `out` has grown to fit. Any thread.
#pragma once

#include <string>
#include <string_view>

#include "http/header_edits.h"
#include "http/message.h"

namespace turnpike::http {

struct ForwardedRequest {
  // Replace the client's method and target when not empty (a plugin's rewrite). The target
  // must be in origin form ("/path?query"). Empty target: the client's, in origin form.
  std::string_view method;
  std::string_view target;
  std::string_view host;          // the Host header sent upstream
  bool host_from_plugin = false;  // `host` came from a plugin: its control bytes are escaped
  std::string_view remote_addr;   // the client (after real-IP): X-Real-IP, end of X-Forwarded-For
  // X-Forwarded-Host when the client did not send a trusted one.
  std::string_view forwarded_host;
  // X-Forwarded-Port when neither a trusted X-Forwarded-Port nor a port in Host says it.
  std::string_view local_port;
  // apisix.trusted_addresses: a trusted peer's X-Forwarded-Proto/Host/Port are kept...
  bool trusted_peer = false;
  // ...and when the list is set, an untrusted peer's X-Forwarded-For is dropped.
  bool drop_client_forwarded_for = false;
  const HeaderEdits* edits = nullptr;  // headers set/added/removed by plugins; may be null
  // Not empty: the request asks the node to switch protocols (a websocket route's upgrade
  // request); "Upgrade: <upgrade>" and "Connection: upgrade" go up, as APISIX's
  // proxy_set_header of both for enable_websocket.
  std::string_view upgrade;
};

// Replaces `out` with the head for `req` forwarded as `f` says.
void EncodeForwardedRequestHead(const RequestHead& req, const ForwardedRequest& f,
                                std::string* out);

}  // namespace turnpike::http
