// Small helpers that phrase configuration errors the way APISIX's JSON-schema validator
// (api7/jsonschema) does, so that a config rejected by APISIX is rejected here with the same
// words: `property "status_code" validation failed: expected 599 to be at most 598`.
//
// Control thread only (config load). Each Check* returns "" when the value is fine, else the
// inner message, which Property() wraps with the property's name.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "turnpike/status.h"

namespace turnpike::plugins::schema {

// `property "<name>" validation failed: <inner>`.
Status Property(std::string_view name, std::string_view inner);
std::string PropertyText(std::string_view name, std::string_view inner);

// "wrong type: expected <expected>, got <type of v>".
std::string WrongType(std::string_view expected, const nlohmann::json& v);

// A JSON integer, or a float with an integral value (YAML and Lua do not tell 16 from 16.0).
bool IsInteger(const nlohmann::json& v);

// An integer within [min, max].
std::string CheckInteger(const nlohmann::json& v, int64_t min, int64_t max);
// A string whose length is within [min_len, max_len].
std::string CheckString(const nlohmann::json& v, size_t min_len, size_t max_len = SIZE_MAX);
std::string CheckBoolean(const nlohmann::json& v);

// An optional property of `conf`: when present it must pass the check above (the error
// names it), and is stored in `*out`; when absent, `*out` keeps its default.
Status ReadBool(const nlohmann::json& conf, std::string_view name, bool* out);
Status ReadString(const nlohmann::json& conf, std::string_view name, size_t min_len,
                  std::string* out);
Status ReadInt(const nlohmann::json& conf, std::string_view name, int64_t min, int64_t max,
               int* out);

}  // namespace turnpike::plugins::schema
