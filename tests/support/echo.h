// Typed view of the test backend's /echo response (see tests/backend/test_backend.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/http_client.h"

namespace turnpike::testing {

struct EchoedRequest {
  std::string method;
  std::string uri;      // raw request target as the backend received it
  std::string version;  // "1.1" / "1.0"
  Headers headers;      // as received, in order
  uint64_t body_length = 0;
  std::string body_fnv1a;  // 16 lowercase hex digits
  std::string body;        // first 1024 bytes of the body
  bool chunked = false;    // the body arrived with chunked transfer coding
  uint64_t conn = 0;       // backend connection sequence number

  std::optional<std::string> Header(std::string_view name) const;  // first, case-insensitive
  std::vector<std::string> HeaderValues(std::string_view name) const;
  bool HasHeader(std::string_view name) const { return Header(name).has_value(); }
};

// Parses an /echo body; nullopt (and `error`) if it is not the backend's echo document.
std::optional<EchoedRequest> ParseEcho(std::string_view body, std::string* error = nullptr);

}  // namespace turnpike::testing
