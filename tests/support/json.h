// A minimal JSON reader for test assertions (the backend's /echo output, gateway error
// bodies). Strict RFC 8259 syntax; numbers are doubles; \u00XX escapes below 0x100 decode to
// that single byte so the backend's Latin-1 escaping of binary bodies round-trips.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace turnpike::testing {

struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  // Defined in json.cc: clang 14 with libstdc++ 12 rejects the implicit one, which it
  // instantiates while `object`'s element type (a pair holding JsonValue) is incomplete.
  JsonValue();

  Type type = Type::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;  // in document order

  // Member `key` of an object; nullptr if absent or not an object.
  const JsonValue* Find(std::string_view key) const;
  bool IsString() const { return type == Type::kString; }
};

// Parses a complete document (surrounding whitespace allowed). nullopt on any syntax error;
// `error`, when given, says where.
std::optional<JsonValue> ParseJson(std::string_view text, std::string* error = nullptr);

}  // namespace turnpike::testing
