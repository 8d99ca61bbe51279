// Parsed HTTP/1.x message heads. Every string_view points into the connection's read buffer
// and is valid only until that buffer is compacted or reused (i.e. for one exchange).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/http_method.h"

namespace turnpike::http {

// The header names the proxy acts on, recognized once per header when a head is parsed, so
// the checks and encoders that follow switch on a byte instead of comparing names. The
// hop-by-hop ones (RFC 9110 §7.6.1) are contiguous, kConnection to kUpgrade.
enum class HeaderId : uint8_t {
  kUnclassified = 0,  // not looked at (a Header made by hand): HeaderIdOf() classifies it
  kOther,             // none of the names below
  kConnection,
  kKeepAlive,
  kProxyConnection,
  kTe,
  kTrailer,
  kTransferEncoding,
  kUpgrade,
  kHost,
  kContentLength,
  kExpect,
  kServer,
  kXRealIp,
  kForwarded,
  kXForwardedFor,
  kXForwardedHost,
  kXForwardedPort,
  kXForwardedProto,
};

// Which of the names above `name` is (any case), else kOther.
HeaderId ClassifyHeaderName(std::string_view name);

inline bool IsHopByHopId(HeaderId id) {
  return id >= HeaderId::kConnection && id <= HeaderId::kUpgrade;
}

struct Header {
  std::string_view name;
  std::string_view value;
  // Set by the parser; a Header made by hand leaves both as they are.
  HeaderId id = HeaderId::kUnclassified;
  // The field arrived as exactly "name: value\r\n": the bytes from name.data() to two past
  // the value's end are the line an encoder would write, so consecutive such lines that are
  // forwarded unchanged go out as one copy.
  bool plain_line = false;
};

inline HeaderId HeaderIdOf(const Header& h) {
  return h.id != HeaderId::kUnclassified ? h.id : ClassifyHeaderName(h.name);
}

// Body framing of a message as it arrived.
enum class Framing : uint8_t {
  kNone,           // no body
  kContentLength,  // Content-Length bytes
  kChunked,        // Transfer-Encoding: chunked
  kUntilClose,     // responses only: body ends when the peer closes
};

struct RequestHead {
  base::Method method = base::Method::kOther;
  std::string_view method_name;
  std::string_view target;      // raw request target as sent ("/a/b?x=1", or absolute-form)
  std::string_view path;        // target without query (absolute-form: path part only)
  std::string_view query;       // without '?'; empty when absent
  uint8_t version_minor = 1;    // HTTP/1.<minor>
  std::vector<Header> headers;  // in arrival order; capacity reused between requests
  std::string_view host;        // Host header (or authority of an absolute-form target), raw
  Framing framing = Framing::kNone;
  uint64_t content_length = 0;
  bool keep_alive = true;  // after Connection / version rules
  bool expect_continue = false;
  // Header names listed in the Connection header (hop-by-hop by declaration), up to 8.
  std::string_view connection_tokens[8];
  uint8_t connection_token_count = 0;

  void Clear();
};

struct ResponseHead {
  int status = 0;
  std::string_view reason;
  uint8_t version_minor = 1;
  std::vector<Header> headers;
  Framing framing = Framing::kNone;
  uint64_t content_length = 0;
  bool keep_alive = true;
  std::string_view connection_tokens[8];
  uint8_t connection_token_count = 0;

  void Clear();
};

// True for the headers RFC 9110 §7.6.1 calls hop-by-hop, which a proxy never forwards:
// Connection, Keep-Alive, Proxy-Connection, TE, Trailer, Transfer-Encoding, Upgrade.
inline bool IsHopByHop(std::string_view name) { return IsHopByHopId(ClassifyHeaderName(name)); }

// The bytes from the start of `first` to the end of `last` when both are views of one head in
// one buffer, as the parser's are (at most 64 KiB apart), else 0. A size guess for encoders.
size_t SpanOfViews(std::string_view first, std::string_view last);

// True when `name` is listed in `tokens` (case-insensitive). The usual empty list costs no
// call.
bool IsListedInTokens(std::string_view name, const std::string_view* tokens, uint8_t count);
inline bool IsListedIn(std::string_view name, const std::string_view* tokens, uint8_t count) {
  return count != 0 && IsListedInTokens(name, tokens, count);
}

// The standard reason phrase for a status code ("OK", "Not Found"), or "Unknown".
std::string_view ReasonPhrase(int status);

// True when a response with this status to this request method never has a body.
inline bool ResponseHasNoBody(int status, bool head_request) {
  return head_request || status == 204 || status == 304 || (status >= 100 && status < 200);
}

}  // namespace turnpike::http
