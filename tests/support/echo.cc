#include "support/echo.h"

#include <strings.h>

#include "support/json.h"

namespace turnpike::testing {

std::optional<std::string> EchoedRequest::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (n.size() == name.size() && ::strncasecmp(n.data(), name.data(), n.size()) == 0) return v;
  }
  return std::nullopt;
}

std::vector<std::string> EchoedRequest::HeaderValues(std::string_view name) const {
  std::vector<std::string> values;
  for (const auto& [n, v] : headers) {
    if (n.size() == name.size() && ::strncasecmp(n.data(), name.data(), n.size()) == 0) {
      values.push_back(v);
    }
  }
  return values;
}

std::optional<EchoedRequest> ParseEcho(std::string_view body, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<EchoedRequest> {
    if (error) *error = why + " in echo body: " + std::string(body.substr(0, 300));
    return std::nullopt;
  };
  std::string json_error;
  std::optional<JsonValue> doc = ParseJson(body, &json_error);
  if (!doc) return fail("bad JSON (" + json_error + ")");
  EchoedRequest e;
  auto str = [&](const char* key, std::string* out) {
    const JsonValue* v = doc->Find(key);
    if (!v || !v->IsString()) return false;
    *out = v->string;
    return true;
  };
  auto num = [&](const char* key, uint64_t* out) {
    const JsonValue* v = doc->Find(key);
    if (!v || v->type != JsonValue::Type::kNumber) return false;
    *out = static_cast<uint64_t>(v->number);
    return true;
  };
  const JsonValue* headers = doc->Find("headers");
  const JsonValue* chunked = doc->Find("chunked");
  if (!str("method", &e.method) || !str("uri", &e.uri) || !str("version", &e.version) ||
      !str("body_fnv1a", &e.body_fnv1a) || !str("body", &e.body) ||
      !num("body_length", &e.body_length) || !num("conn", &e.conn) || !headers ||
      headers->type != JsonValue::Type::kArray || !chunked ||
      chunked->type != JsonValue::Type::kBool) {
    return fail("missing or mistyped field");
  }
  e.chunked = chunked->boolean;
  for (const JsonValue& h : headers->array) {
    if (h.type != JsonValue::Type::kArray || h.array.size() != 2 || !h.array[0].IsString() ||
        !h.array[1].IsString()) {
      return fail("bad header pair");
    }
    e.headers.emplace_back(h.array[0].string, h.array[1].string);
  }
  return e;
}

}  // namespace turnpike::testing
