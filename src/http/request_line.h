// The request line and the request target (RFC 9112 §3, RFC 3986), checked byte by byte.
//
// Turnpike parses the request line itself instead of leaving it to llhttp: llhttp only knows
// a fixed list of methods, while nginx (and so APISIX) proxies any method made of A-Z, '_'
// and '-'. The rules here are strict on purpose; anything a downstream or upstream parser
// could read differently is refused:
//   request-line = method SP request-target SP "HTTP/" DIGIT "." DIGIT CRLF
// with exactly one SP between the parts, and a target made of visible ASCII or bytes >= 0x80
// (no controls, no whitespace). Pure functions; no allocation.
#pragma once

#include <cstddef>
#include <string_view>

namespace turnpike::http {

struct RequestLine {
  std::string_view method;  // [A-Z_-]+
  std::string_view target;  // raw request target, fragment included
  int major = 1;
  int minor = 1;
  size_t length = 0;  // bytes of the line including its CRLF
};

// Parses the request line at the start of `data` (which must hold the whole line). Returns 0,
// or the status to answer: 400 for a malformed line, 505 for a well-formed version whose
// major number is not 1.
int ParseRequestLine(std::string_view data, RequestLine* line);

// A request target split the way nginx computes `$uri` and `$args`.
struct RequestTarget {
  std::string_view authority;         // absolute-form only: "host[:port]"
  std::string_view path;              // origin path ("/" for an absolute-form target without one)
  std::string_view query;             // after '?', without it; empty when absent
  std::string_view without_fragment;  // the target up to any '#'
};

// Splits origin-form ("/p?q"), absolute-form ("http://host:port/p?q", scheme http or https
// in any case) and asterisk-form ("*") targets. A fragment ('#' and what follows) is not part
// of the resource: it is cut off before the path and query are taken, as nginx does, so
// "/admin#x" is "/admin". Returns false for anything else (authority-form, other schemes,
// userinfo, an empty or invalid authority): a 400.
bool SplitRequestTarget(std::string_view target, RequestTarget* out);

// True for a valid Host header value or absolute-form authority: an IPv4 address or
// reg-name (RFC 3986 unreserved / pct-encoded / sub-delims characters), or an IP-literal in
// brackets, optionally followed by ':' and up to five digits of port. Empty is valid (RFC 9112
// §3.2: a target without authority has an empty Host). No '@', '/', whitespace or controls.
bool IsValidHost(std::string_view host);

}  // namespace turnpike::http
