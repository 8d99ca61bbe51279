// Request variables: APISIX's `ctx.var` (reference §7), shared by route predicates (`vars`),
// plugins and templates.
//
// A variable name is compiled once, at config load, into a VarRef; looking it up per request
// is then a switch on the kind, never a parse of the name. The request side implements
// RequestVars over the parsed request (header views, query string, cookies), so a lookup
// never re-parses the whole request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "turnpike/status.h"

namespace turnpike {

enum class BuiltinVar : uint8_t {
  kRemoteAddr,        // client address (after real-IP processing)
  kRemotePort,
  kRealipRemoteAddr,  // the peer address before real-IP processing
  kServerAddr,        // local address the request arrived on
  kServerPort,
  kScheme,            // "http"
  kHost,              // lowercased Host without port
  kUri,               // normalized path (nginx $uri)
  kRequestUri,        // $uri + "?" + args (APISIX's ctx.var.request_uri)
  kRealRequestUri,    // the raw request target
  kArgs,              // raw query string without '?'
  kQueryString,       // same as kArgs
  kIsArgs,            // "?" when there is a query string, else ""
  kRequestMethod,
  kRequestLength,     // bytes of the request head (log phase: head + body)
  kRouteId,
  kRouteName,
  kServiceId,
  kServiceName,
  kUpstreamUri,       // what is sent upstream as the request target
  kStatus,            // response status (header_filter phase and later)
  // nginx variables. Those marked (log) exist only once the request reached that point
  // (nil before); lists (upstream_*) hold one item per upstream attempt, ", "-separated.
  kContentType,           // Content-Type request header
  kContentLength,         // Content-Length request header
  kServerProtocol,        // "HTTP/1.1" / "HTTP/1.0"
  kServerName,            // always "_" (APISIX's `server_name _;`; Turnpike has no names)
  kHostname,              // gethostname()
  kRequest,               // the request line: "GET /a?b HTTP/1.1"
  kDocumentUri,           // same as uri
  kRequestTime,           // (log) seconds since the head was read, ms resolution: "0.003"
  kMsec,                  // wall clock now, seconds with ms: "1700000000.123"
  kTimeIso8601,           // local time now, "2026-11-30T05:21:21+00:00"
  kTimeLocal,             // local time now, "30/Nov/2026:05:21:21 +0000"
  kConnection,            // connection serial number (process-wide)
  kConnectionRequests,    // requests so far on this connection, this one included
  kRequestId,             // 32 random hex digits, fixed for the request
  kPid,                   // process id
  kBytesSent,             // (log) bytes sent to the client, head included
  kBodyBytesSent,         // (log) body bytes sent to the client
  kUpstreamScheme,        // "http" once a route with an upstream matched
  kUpstreamHost,          // Host header sent upstream (after a node was picked)
  kUpstreamAddr,          // "ip:port" per attempt (after a node was picked)
  kUpstreamStatus,        // status per attempt (502/504 for failed ones)
  kUpstreamConnectTime,   // "0.001" per attempt ("0.000" on a pooled connection, "-": none)
  kUpstreamHeaderTime,    // time to the response head per attempt ("-": none)
  kUpstreamResponseTime,  // time to the end of the response per attempt
  kBalancerIp,            // picked node's IP
  kBalancerPort,          // picked node's port
  kRequestBody,           // the request body when buffered (else nil)
  kRemoteUser,            // the user of `Authorization: Basic ...` (nil without a valid one)
  kCount,
};

struct VarRef {
  enum class Kind : uint8_t {
    kBuiltin,
    kHeader,    // http_NAME: `name` holds the header name, lowercased, '_' -> '-'
    kArg,       // arg_NAME: first value of query argument NAME (case-sensitive)
    kCookie,    // cookie_NAME (case-sensitive)
    kPostArg,   // post_arg_NAME: urlencoded form field
    kUriParam,  // uri_param_NAME: path parameter captured by the router
  };
  Kind kind = Kind::kBuiltin;
  BuiltinVar builtin = BuiltinVar::kRemoteAddr;
  std::string name;
  std::string source;  // the name as written, for messages

  bool operator==(const VarRef&) const = default;
};

// Control thread (config load). Accepts the builtin names above and the prefix families;
// anything else is an error naming the variable.
StatusOr<VarRef> CompileVar(std::string_view name);

// The name of a builtin ("remote_addr").
std::string_view BuiltinVarName(BuiltinVar v);

class RequestVars {
 public:
  // Worker, hot path. nullopt when the variable is absent (missing header, no such arg...).
  // The view stays valid until the request ends.
  virtual std::optional<std::string_view> Get(const VarRef& var) = 0;

 protected:
  ~RequestVars() = default;
};

}  // namespace turnpike
