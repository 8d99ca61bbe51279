#include "plugins/ip_restriction/config.h"

#include <vector>

#include "plugins/common/schema.h"

namespace turnpike::plugins::ip_restriction {
namespace {

// Reads a whitelist/blacklist array into `entries`; the error names the failing item as
// APISIX's validator does ("failed to validate item 2: ...") and then says why, which
// APISIX's generic "object matches none of the required" does not.
Status ReadList(std::string_view field, const nlohmann::json& v, std::vector<std::string>* out) {
  if (!v.is_array()) return schema::Property(field, schema::WrongType("array", v));
  if (v.empty()) return schema::Property(field, "expect array to have at least 1 items");
  for (size_t i = 0; i < v.size(); ++i) {
    const nlohmann::json& item = v[i];
    std::string prefix = "failed to validate item " + std::to_string(i + 1) +
                         ": object matches none of the required";
    if (!item.is_string()) {
      return schema::Property(field, prefix + " (" + schema::WrongType("string", item) + ")");
    }
    const std::string& entry = item.get_ref<const std::string&>();
    // One entry at a time, so the error names the entry that is wrong.
    if (!IpMatcher::Build({entry}).ok()) {
      return schema::Property(field, prefix + " (invalid ip address: " + entry + ")");
    }
    out->push_back(entry);
  }
  return Status::Ok();
}

}  // namespace

std::string ReplyBody(std::string_view message) {
  // A message from YAML may hold invalid UTF-8, on which dump() throws; it gets U+FFFD.
  std::string quoted = nlohmann::json(std::string(message))
                           .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string body = "{\"message\":";
  for (char c : quoted) {
    if (c == '/') body.push_back('\\');
    body.push_back(c);
  }
  body.append("}\n");
  return body;
}

StatusOr<Config> ParseConfig(const nlohmann::json& conf) {
  if (!conf.is_object()) return Status::Error(schema::WrongType("object", conf));
  Config c;
  if (auto it = conf.find("message"); it != conf.end()) {
    if (std::string e = schema::CheckString(*it, 1, 1024); !e.empty()) {
      return schema::Property("message", e);
    }
    c.message = it->get<std::string>();
  }
  if (auto it = conf.find("response_code"); it != conf.end()) {
    if (std::string e = schema::CheckInteger(*it, 403, 404); !e.empty()) {
      return schema::Property("response_code", e);
    }
    c.response_code = static_cast<int>(it->get<double>());
  }
  auto white = conf.find("whitelist");
  auto black = conf.find("blacklist");
  bool has_white = white != conf.end();
  bool has_black = black != conf.end();
  std::vector<std::string> entries;
  if (has_white) {
    if (Status s = ReadList("whitelist", *white, &entries); !s.ok()) return s;
  }
  if (has_black) {
    std::vector<std::string> black_entries;
    if (Status s = ReadList("blacklist", *black, &black_entries); !s.ok()) return s;
    if (!has_white) entries = std::move(black_entries);
  }
  if (!has_white && !has_black) {
    return Status::Error("value should match only one schema, but matches none");
  }
  if (has_white && has_black) {
    return Status::Error("value should match only one schema, but matches both schemas 1 and 2");
  }
  StatusOr<IpMatcher> matcher = IpMatcher::Build(entries);
  if (!matcher.ok()) return matcher.status();
  c.matcher = std::move(matcher).value();
  c.whitelist = has_white;
  return c;
}

}  // namespace turnpike::plugins::ip_restriction
