// Shared helpers for the integration tests: where the binaries are, YAML snippets, and the
// assertions several test files need. Header-only: only *_test.cc files are compiled.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "support/backend.h"
#include "support/echo.h"
#include "support/http_client.h"
#include "support/json.h"
#include "support/net.h"
#include "support/turnpike.h"

namespace turnpike::itest {

using namespace turnpike::testing;  // NOLINT: test helpers are the vocabulary here

// The gateway under test: the build's own, or another build of the same sources named by
// TURNPIKE_TEST_BIN (scripts/build-pgo's profile-guided binary, checked with these tests).
inline const std::string kTurnpikeBin = [] {
  const char* other = std::getenv("TURNPIKE_TEST_BIN");
  return std::string(other != nullptr && *other != '\0' ? other : TURNPIKE_BIN);
}();
inline const std::string kBackendBin = TURNPIKE_BACKEND_BIN;

// The bound on Turnpike's peak RSS (VmHWM) while it streams a body far larger than it: a
// daemon that buffered the body would pass it by far. Under AddressSanitizer the shadow
// memory, allocator and quarantine alone take about 100 MiB, so the bound is wider there
// (still a small fraction of the bodies streamed).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr long kMaxStreamingPeakRssKb = 256 * 1024;
#else
inline constexpr long kMaxStreamingPeakRssKb = 100 * 1024;
#endif

inline constexpr char kNotFoundBody[] = "{\"error_msg\":\"404 Route Not Found\"}\n";

// `{host: 127.0.0.1, port: P, weight: W}` (list form of an upstream node).
inline std::string Node(int port, int weight = 1) {
  return "{host: 127.0.0.1, port: " + std::to_string(port) + ", weight: " + std::to_string(weight) +
         "}";
}

// Replaces every `{KEY}` in `text` by its value.
inline std::string Fill(std::string text,
                        std::initializer_list<std::pair<std::string, std::string>> values) {
  for (const auto& [key, value] : values) {
    std::string token = "{" + key + "}";
    for (size_t pos = text.find(token); pos != std::string::npos;
         pos = text.find(token, pos + value.size())) {
      text.replace(pos, token.size(), value);
    }
  }
  return text;
}

// Starts one backend per id; reports failures to the current test and skips failed ones.
inline std::vector<std::unique_ptr<Backend>> StartBackends(std::initializer_list<std::string> ids) {
  std::vector<std::unique_ptr<Backend>> backends;
  for (const std::string& id : ids) {
    if (std::unique_ptr<Backend> b = StartBackend(kBackendBin, id)) {
      backends.push_back(std::move(b));
    }
  }
  return backends;
}

// The backend that served `r` (its X-Backend-Id), or "" if the response is not from one.
inline std::string BackendOf(const HttpResponse& r) {
  return r.Header("X-Backend-Id").value_or("");
}

// Asserts the response is a gateway error with body `{"error_msg": "..."}`.
inline void ExpectJsonError(const HttpResponse& r) {
  std::string error;
  std::optional<JsonValue> doc = ParseJson(r.body, &error);
  ASSERT_TRUE(doc.has_value()) << "error body is not JSON (" << error << "):\n" << r.DebugString();
  ASSERT_EQ(doc->type, JsonValue::Type::kObject) << r.DebugString();
  const JsonValue* msg = doc->Find("error_msg");
  ASSERT_NE(msg, nullptr) << r.DebugString();
  EXPECT_TRUE(msg->IsString()) << r.DebugString();
  EXPECT_FALSE(r.HasHeader("X-Backend-Id")) << "gateway error came from a backend";
}

// Parses an /echo response body, failing the test if it is not one.
inline EchoedRequest Echo(const HttpResponse& r) {
  std::string error;
  std::optional<EchoedRequest> e = ParseEcho(r.body, &error);
  EXPECT_TRUE(e.has_value()) << error << "\n" << r.DebugString();
  return e.value_or(EchoedRequest{});
}

// Starts `gw` with `routes_yaml` or fails the test (use with ASSERT_NO_FATAL_FAILURE).
inline void StartGateway(Turnpike& gw, const std::string& routes_yaml,
                         const TurnpikeOptions& options = {}) {
  ASSERT_TRUE(gw.Start(routes_yaml, options)) << gw.error();
}

}  // namespace turnpike::itest
