#include "plugins/proxy_rewrite/config.h"

#include <array>
#include <string_view>

#include "plugins/common/schema.h"

namespace turnpike::plugins::proxy_rewrite {
namespace {

constexpr char kOneOfNone[] = "value should match only one schema, but matches none";
constexpr std::string_view kHostPattern = "^[0-9a-zA-Z-.]+(:\\d{1,5})?$";
constexpr std::array<std::string_view, 14> kMethods = {
    "GET",  "POST", "PUT",      "HEAD", "DELETE", "OPTIONS", "MKCOL",
    "COPY", "MOVE", "PROPFIND", "LOCK", "UNLOCK", "PATCH",   "TRACE"};

constexpr Template::Options kHeaderValue = {.captures = true};
constexpr Template::Options kUri = {.escape = Template::Escape::kQuerySeparator};
constexpr Template::Options kReplacement = {.re_sub_syntax = true};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// ^[0-9a-zA-Z-.]+(:\d{1,5})?$
bool MatchesHostPattern(std::string_view h) {
  size_t i = 0;
  while (i < h.size() && (IsDigit(h[i]) || (h[i] >= 'a' && h[i] <= 'z') ||
                          (h[i] >= 'A' && h[i] <= 'Z') || h[i] == '-' || h[i] == '.')) {
    ++i;
  }
  if (i == 0) return false;
  if (i == h.size()) return true;
  if (h[i] != ':') return false;
  std::string_view port = h.substr(i + 1);
  if (port.empty() || port.size() > 5) return false;
  for (char c : port) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

// A value given as a string or a number, as Lua's tostring writes it (3 -> "3", 1.5 -> "1.5").
std::optional<std::string> ScalarText(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (schema::IsInteger(v)) return std::to_string(static_cast<int64_t>(v.get<double>()));
  if (v.is_number()) return v.dump();
  return std::nullopt;
}

// core.utils.validate_header_field: '!'..'~' without ':'.
bool ValidHeaderField(std::string_view f) {
  for (char ch : f) {
    const auto b = static_cast<unsigned char>(ch);
    if (b <= 32 || b >= 127 || b == ':') return false;
  }
  return true;
}

// core.utils.validate_header_value (strings only): no byte below 32 or from 127 up.
bool ValidHeaderValue(std::string_view v) {
  for (char ch : v) {
    const auto b = static_cast<unsigned char>(ch);
    if (b < 32 || b >= 127) return false;
  }
  return true;
}

bool IsNewForm(const nlohmann::json& h) {
  for (const char* k : {"add", "set", "remove"}) {
    auto it = h.find(k);
    if (it != h.end() && (it->is_object() || it->is_array())) return true;
  }
  return false;
}

// The new form's `add` / `set`: names without ':' to a scalar or a non-empty array of them.
// False when the object breaks the schema (the caller reports headers' oneOf).
bool ParseRules(const nlohmann::json& obj, std::vector<HeaderRule>* out) {
  if (!obj.is_object() || obj.empty()) return false;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (it.key().empty() || it.key().find(':') != std::string::npos) return false;
    HeaderRule rule;
    rule.name = it.key();
    if (it->is_array()) {
      if (it->empty()) return false;
      for (const nlohmann::json& v : *it) {
        std::optional<std::string> text = ScalarText(v);
        if (!text) return false;
        rule.values.push_back(Template::Compile(*text, kHeaderValue));
      }
    } else {
      std::optional<std::string> text = ScalarText(*it);
      if (!text) return false;
      rule.values.push_back(Template::Compile(*text, kHeaderValue));
    }
    out->push_back(std::move(rule));
  }
  return true;
}

Status ParseHeaders(const nlohmann::json& h, Config* c) {
  if (!h.is_object()) return schema::Property("headers", kOneOfNone);
  if (h.empty()) return schema::Property("headers", kOneOfNone);
  if (IsNewForm(h)) {
    for (auto it = h.begin(); it != h.end(); ++it) {
      const std::string& k = it.key();
      bool ok = false;
      if (k == "add") {
        ok = ParseRules(*it, &c->add);
      } else if (k == "set") {
        ok = ParseRules(*it, &c->set);
      } else if (k == "remove") {
        ok = it->is_array() && !it->empty();
        for (const nlohmann::json& n : ok ? *it : nlohmann::json::array()) {
          ok = ok && n.is_string() && !n.get_ref<const std::string&>().empty() &&
               n.get_ref<const std::string&>().find(':') == std::string::npos;
          if (ok) c->remove.push_back(n.get<std::string>());
        }
      }
      // Another key breaks the new form (additionalProperties: false), and the legacy form
      // cannot take an object or array value either: neither branch matches.
      if (!ok) return schema::Property("headers", kOneOfNone);
    }
    return Status::Ok();
  }
  // The legacy form: {name: value} means set; check_set_headers' own messages.
  for (auto it = h.begin(); it != h.end(); ++it) {
    const std::string& k = it.key();
    std::optional<std::string> text = ScalarText(*it);
    if (!text) {
      // The schema's pattern properties refuse it for a name without ':' first.
      if (k.find(':') == std::string::npos) return schema::Property("headers", kOneOfNone);
      return Status::Error("invalid type as header value");
    }
    if (k.empty()) return Status::Error("invalid field length in header");
    if (!ValidHeaderField(k)) return Status::Error("invalid field character in header");
    if (it->is_string() && !ValidHeaderValue(*text)) {
      return Status::Error("invalid value character in header");
    }
    HeaderRule rule;
    rule.name = k;
    rule.values.push_back(Template::Compile(*text, kHeaderValue));
    c->set.push_back(std::move(rule));
  }
  return Status::Ok();
}

Status ParseRegexUri(const nlohmann::json& r, Config* c) {
  if (!r.is_array()) return schema::Property("regex_uri", schema::WrongType("array", r));
  if (r.size() < 2) {
    return schema::Property("regex_uri", "expect array to have at least 2 items");
  }
  for (size_t i = 0; i < r.size(); ++i) {
    if (!r[i].is_string()) {
      return schema::Property("regex_uri", "failed to validate item " + std::to_string(i + 1) +
                                               ": " + schema::WrongType("string", r[i]));
    }
  }
  if (r.size() % 2 != 0) return Status::Error("The length of regex_uri should be an even number");
  for (size_t i = 0; i < r.size(); i += 2) {
    const std::string& pattern = r[i].get_ref<const std::string&>();
    const std::string& replacement = r[i + 1].get_ref<const std::string&>();
    auto fail = [&](std::string_view why) {
      return Status::Error("invalid regex_uri(" + pattern + ", " + replacement +
                           "): " + std::string(why));
    };
    StatusOr<Regex> re = Regex::Compile(pattern);
    if (!re.ok()) return fail(re.status().message());
    StatusOr<Template> repl = Template::CompileStrict(replacement, kReplacement);
    if (!repl.ok()) return fail(repl.status().message());
    c->max_captures = std::max(c->max_captures, re.value().capture_count());
    c->regex_uri.push_back({std::move(re).value(), std::move(repl).value(), pattern});
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Config> ParseConfig(const nlohmann::json& conf) {
  if (!conf.is_object()) return Status::Error(schema::WrongType("object", conf));
  if (conf.empty()) return Status::Error("expect object to have at least 1 properties");
  Config c;
  if (auto it = conf.find("uri"); it != conf.end()) {
    if (std::string e = schema::CheckString(*it, 1, 4096); !e.empty()) {
      return schema::Property("uri", e);
    }
    const std::string& uri = it->get_ref<const std::string&>();
    if (uri[0] != '/') {
      return schema::Property("uri", "failed to match pattern \"^\\\\/.*\" with \"" + uri + "\"");
    }
    c.has_uri = true;
    c.uri = Template::Compile(uri, kUri);
  }
  if (auto it = conf.find("regex_uri"); it != conf.end()) {
    if (Status s = ParseRegexUri(*it, &c); !s.ok()) return s;
  }
  if (auto it = conf.find("method"); it != conf.end()) {
    if (!it->is_string()) return schema::Property("method", schema::WrongType("string", *it));
    const std::string& m = it->get_ref<const std::string&>();
    bool known = false;
    for (std::string_view k : kMethods) known = known || m == k;
    if (!known) return schema::Property("method", "matches none of the enum values");
    c.method = m;
  }
  if (auto it = conf.find("host"); it != conf.end()) {
    if (!it->is_string()) return schema::Property("host", schema::WrongType("string", *it));
    const std::string& h = it->get_ref<const std::string&>();
    if (!MatchesHostPattern(h)) {
      return schema::Property("host", "failed to match pattern \"" + std::string(kHostPattern) +
                                          "\" with \"" + h + "\"");
    }
    c.host = h;
  }
  if (auto it = conf.find("headers"); it != conf.end()) {
    if (Status s = ParseHeaders(*it, &c); !s.ok()) return s;
  }
  if (Status s =
          schema::ReadBool(conf, "use_real_request_uri_unsafe", &c.use_real_request_uri_unsafe);
      !s.ok()) {
    return s;
  }
  return c;
}

}  // namespace turnpike::plugins::proxy_rewrite
