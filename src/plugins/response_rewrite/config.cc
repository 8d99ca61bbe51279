#include "plugins/response_rewrite/config.h"

#include <cmath>

#include "plugins/common/schema.h"
#include "turnpike/strings.h"

namespace turnpike::plugins::response_rewrite {
namespace {

constexpr char kHeadersMismatch[] = "object matches none of the required";

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

// A header value given as a string or a number (Lua's tostring: 3 -> "3", 1.5 -> "1.5").
std::optional<std::string> HeaderValue(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (schema::IsInteger(v)) return std::to_string(static_cast<int64_t>(v.get<double>()));
  if (v.is_number()) return v.dump();
  return std::nullopt;
}

// `headers.add` item: "Name: value". Must pass the schema pattern ^[^:]+:[^:]*[^/]$ and
// APISIX's per-request parse ^([^:\s]+)\s*:\s*([^:]+)$.
bool ParseAddItem(std::string_view item, std::string* name, std::string* value) {
  size_t colon = item.find(':');
  if (colon == 0 || colon == std::string_view::npos) return false;
  std::string_view rest = item.substr(colon + 1);
  if (rest.empty() || rest.back() == '/') return false;
  if (rest.find(':') != std::string_view::npos) return false;  // the value holds no ':'
  std::string_view n = item.substr(0, colon);
  while (!n.empty() && IsSpace(n.back())) n.remove_suffix(1);
  if (n.empty()) return false;
  for (char c : n) {
    if (IsSpace(c)) return false;
  }
  // \s* after the colon, leaving at least one character for the value.
  while (rest.size() > 1 && IsSpace(rest.front())) rest.remove_prefix(1);
  *name = std::string(n);
  *value = std::string(rest);
  return true;
}

Status ParseSetObject(const nlohmann::json& obj, std::vector<HeaderOp>* out, bool new_form) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    std::optional<std::string> value = HeaderValue(*it);
    if (new_form) {
      if (!value || it.key().empty()) return schema::Property("headers", kHeadersMismatch);
    } else {
      // check_set_headers' messages (the schema lets these through its second branch).
      if (!value) return Status::Error("invalid type as header value");
      if (it.key().empty()) return Status::Error("invalid field length in header");
    }
    out->push_back({it.key(), Template::Compile(*value)});
  }
  return Status::Ok();
}

Status ParseHeaders(const nlohmann::json& h, Config* c) {
  if (!h.is_object()) return schema::Property("headers", schema::WrongType("object", h));
  auto add = h.find("add");
  auto set = h.find("set");
  auto remove = h.find("remove");
  // APISIX: the new form when add, set or remove is a table (array or object).
  auto is_table = [&](nlohmann::json::const_iterator it) {
    return it != h.end() && (it->is_array() || it->is_object());
  };
  if (!is_table(add) && !is_table(set) && !is_table(remove)) {
    return ParseSetObject(h, &c->set, false);
  }
  if (add != h.end()) {
    if (!add->is_array() || add->empty()) return schema::Property("headers", kHeadersMismatch);
    for (const nlohmann::json& item : *add) {
      if (!item.is_string()) return schema::Property("headers", kHeadersMismatch);
      std::string name;
      std::string value;
      if (!ParseAddItem(item.get_ref<const std::string&>(), &name, &value)) {
        return schema::Property("headers", std::string(kHeadersMismatch) + " (invalid header \"" +
                                               item.get<std::string>() + "\" in add)");
      }
      c->add.push_back({std::move(name), Template::Compile(value)});
    }
  }
  if (set != h.end()) {
    if (!set->is_object() || set->empty()) return schema::Property("headers", kHeadersMismatch);
    if (Status s = ParseSetObject(*set, &c->set, true); !s.ok()) return s;
  }
  if (remove != h.end()) {
    if (!remove->is_array() || remove->empty()) {
      return schema::Property("headers", kHeadersMismatch);
    }
    for (const nlohmann::json& item : *remove) {
      if (!item.is_string() || item.get_ref<const std::string&>().empty() ||
          item.get_ref<const std::string&>().find(':') != std::string::npos) {
        return schema::Property("headers", kHeadersMismatch);
      }
      c->remove.push_back(item.get<std::string>());
    }
  }
  return Status::Ok();
}

Status ParseFilters(const nlohmann::json& f, Config* c) {
  if (!f.is_array()) return schema::Property("filters", schema::WrongType("array", f));
  if (f.empty()) return schema::Property("filters", "expect array to have at least 1 items");
  for (size_t i = 0; i < f.size(); ++i) {
    const nlohmann::json& item = f[i];
    std::string at = "failed to validate item " + std::to_string(i + 1) + ": ";
    if (!item.is_object())
      return schema::Property("filters", at + schema::WrongType("object", item));
    for (const char* required : {"regex", "replace"}) {
      if (!item.contains(required)) {
        return schema::Property("filters", at + "property \"" + required + "\" is required");
      }
    }
    if (std::string e = schema::CheckString(item["regex"], 1); !e.empty()) {
      return schema::Property("filters", at + schema::PropertyText("regex", e));
    }
    if (std::string e = schema::CheckString(item["replace"], 0); !e.empty()) {
      return schema::Property("filters", at + schema::PropertyText("replace", e));
    }
    bool global = false;
    if (auto scope = item.find("scope"); scope != item.end()) {
      if (!scope->is_string()) {
        return schema::Property(
            "filters", at + schema::PropertyText("scope", schema::WrongType("string", *scope)));
      }
      const std::string& s = scope->get_ref<const std::string&>();
      if (s != "once" && s != "global") {
        return schema::Property(
            "filters", at + schema::PropertyText("scope", "matches none of the enum values"));
      }
      global = s == "global";
    }
    std::string options = "jo";
    if (auto opt = item.find("options"); opt != item.end()) {
      if (std::string e = schema::CheckString(*opt, 0); !e.empty()) {
        return schema::Property("filters", at + schema::PropertyText("options", e));
      }
      options = opt->get<std::string>();
    }
    const std::string& regex = item["regex"].get_ref<const std::string&>();
    StatusOr<Substitution> sub =
        Substitution::Compile(regex, item["replace"].get<std::string>(), options, global);
    if (!sub.ok()) {
      return Status::Error("regex \"" + regex + "\" validation failed: " + sub.status().message());
    }
    c->filters.push_back(std::move(sub).value());
  }
  return Status::Ok();
}

}  // namespace

std::optional<std::string> DecodeBase64(std::string_view in) {
  std::string out;
  if (!AppendBase64Decoded(&out, in)) return std::nullopt;
  return out;
}

StatusOr<Config> ParseConfig(const nlohmann::json& conf) {
  if (!conf.is_object()) return Status::Error(schema::WrongType("object", conf));
  Config c;
  if (auto it = conf.find("status_code"); it != conf.end()) {
    if (std::string e = schema::CheckInteger(*it, 200, 598); !e.empty()) {
      return schema::Property("status_code", e);
    }
    c.status_code = static_cast<int>(it->get<double>());
  }
  if (auto it = conf.find("max_resp_body_size"); it != conf.end()) {
    if (std::string e = schema::CheckInteger(*it, 1, INT64_MAX); !e.empty()) {
      return schema::Property("max_resp_body_size", e);
    }
    c.max_resp_body_size = static_cast<size_t>(it->get<double>());
  }
  bool body_base64 = false;
  if (auto it = conf.find("body_base64"); it != conf.end()) {
    if (std::string e = schema::CheckBoolean(*it); !e.empty()) {
      return schema::Property("body_base64", e);
    }
    body_base64 = it->get<bool>();
  }
  auto body = conf.find("body");
  if (body != conf.end()) {
    if (std::string e = schema::CheckString(*body, 0); !e.empty()) {
      return schema::Property("body", e);
    }
    c.body = body->get<std::string>();
  }
  auto filters = conf.find("filters");
  if (body != conf.end() && filters != conf.end()) {
    return Status::Error(
        "failed to validate dependent schema for \"body\": value wasn't supposed to match "
        "schema");
  }
  if (auto it = conf.find("vars"); it != conf.end()) {
    if (!it->is_array()) return schema::Property("vars", schema::WrongType("array", *it));
  }
  if (auto it = conf.find("headers"); it != conf.end()) {
    if (Status s = ParseHeaders(*it, &c); !s.ok()) return s;
  }
  if (body_base64) {
    if (!c.body || c.body->empty()) return Status::Error("invalid base64 content");
    std::optional<std::string> decoded = DecodeBase64(*c.body);
    if (!decoded) return Status::Error("invalid base64 content");
    c.body = std::move(decoded);
  }
  if (auto it = conf.find("vars"); it != conf.end()) {
    StatusOr<ExpressionConstPtr> e = Expression::Compile(*it);
    if (!e.ok()) return e.status();
    c.vars = std::move(e).value();
  }
  if (filters != conf.end()) {
    if (Status s = ParseFilters(*filters, &c); !s.ok()) return s;
  }
  return c;
}

}  // namespace turnpike::plugins::response_rewrite
