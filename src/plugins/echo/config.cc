#include "plugins/echo/config.h"

namespace turnpike::plugins::echo {
namespace {

Status WrongType(std::string_view field, std::string_view expected, const nlohmann::json& v) {
  return Status::Error("property \"" + std::string(field) +
                       "\" validation failed: wrong type: expected " + std::string(expected) +
                       ", got " + v.type_name());
}

}  // namespace

StatusOr<Config> ParseConfig(const nlohmann::json& conf) {
  if (!conf.is_object()) return WrongType("conf", "object", conf);
  Config c;
  for (const char* field : {"before_body", "body", "after_body"}) {
    auto it = conf.find(field);
    if (it == conf.end()) continue;
    if (!it->is_string()) return WrongType(field, "string", *it);
    std::string value = it->get<std::string>();
    if (std::string_view(field) == "before_body") c.before_body = std::move(value);
    if (std::string_view(field) == "body") c.body = std::move(value);
    if (std::string_view(field) == "after_body") c.after_body = std::move(value);
  }
  if (auto it = conf.find("headers"); it != conf.end()) {
    if (!it->is_object()) return WrongType("headers", "object", *it);
    if (it->empty()) {
      return Status::Error(
          "property \"headers\" validation failed: expect object to have at least 1 "
          "properties");
    }
    for (auto h = it->begin(); h != it->end(); ++h) {
      if (h.key().empty()) return Status::Error("invalid field length in header");
      if (h->is_string()) {
        c.headers.emplace_back(h.key(), h->get<std::string>());
      } else if (h->is_number()) {
        c.headers.emplace_back(h.key(), h->dump());
      } else {
        return Status::Error("invalid type as header value");
      }
    }
  }
  if (!c.before_body && !c.body && !c.after_body) {
    return Status::Error(
        "value should match only one schema, but matches none: one of \"before_body\", "
        "\"body\", \"after_body\" is required");
  }
  return c;
}

}  // namespace turnpike::plugins::echo
