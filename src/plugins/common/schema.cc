#include "plugins/common/schema.h"

#include <cmath>

namespace turnpike::plugins::schema {

std::string PropertyText(std::string_view name, std::string_view inner) {
  return "property \"" + std::string(name) + "\" validation failed: " + std::string(inner);
}

Status Property(std::string_view name, std::string_view inner) {
  return Status::Error(PropertyText(name, inner));
}

std::string WrongType(std::string_view expected, const nlohmann::json& v) {
  return "wrong type: expected " + std::string(expected) + ", got " + v.type_name();
}

bool IsInteger(const nlohmann::json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  double d = v.get<double>();
  return std::isfinite(d) && d == std::floor(d);
}

std::string CheckInteger(const nlohmann::json& v, int64_t min, int64_t max) {
  if (!IsInteger(v)) return WrongType("integer", v);
  // Compared as double so that huge values (beyond int64) are reported, not wrapped.
  double d = v.get<double>();
  std::string text = v.is_number_float() ? std::to_string(static_cast<int64_t>(d)) : v.dump();
  if (d < static_cast<double>(min)) {
    return "expected " + text + " to be at least " + std::to_string(min);
  }
  if (d > static_cast<double>(max)) {
    return "expected " + text + " to be at most " + std::to_string(max);
  }
  return "";
}

std::string CheckString(const nlohmann::json& v, size_t min_len, size_t max_len) {
  if (!v.is_string()) return WrongType("string", v);
  size_t n = v.get_ref<const std::string&>().size();
  if (n < min_len) {
    return "string too short, expected at least " + std::to_string(min_len) + ", got " +
           std::to_string(n);
  }
  if (n > max_len) {
    return "string too long, expected at most " + std::to_string(max_len) + ", got " +
           std::to_string(n);
  }
  return "";
}

std::string CheckBoolean(const nlohmann::json& v) {
  return v.is_boolean() ? "" : WrongType("boolean", v);
}

Status ReadBool(const nlohmann::json& conf, std::string_view name, bool* out) {
  auto it = conf.find(name);
  if (it == conf.end()) return Status::Ok();
  if (std::string e = CheckBoolean(*it); !e.empty()) return Property(name, e);
  *out = it->get<bool>();
  return Status::Ok();
}

Status ReadString(const nlohmann::json& conf, std::string_view name, size_t min_len,
                  std::string* out) {
  auto it = conf.find(name);
  if (it == conf.end()) return Status::Ok();
  if (std::string e = CheckString(*it, min_len); !e.empty()) return Property(name, e);
  *out = it->get<std::string>();
  return Status::Ok();
}

Status ReadInt(const nlohmann::json& conf, std::string_view name, int64_t min, int64_t max,
               int* out) {
  auto it = conf.find(name);
  if (it == conf.end()) return Status::Ok();
  if (std::string e = CheckInteger(*it, min, max); !e.empty()) return Property(name, e);
  *out = static_cast<int>(it->get<double>());
  return Status::Ok();
}

}  // namespace turnpike::plugins::schema
