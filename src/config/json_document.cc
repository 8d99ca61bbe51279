#include "config/json_document.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "config/yaml_scalar.h"

namespace turnpike::config {
namespace {

using Json = nlohmann::json;

// Validates JSON without building a document; remembers the first error.
struct StrictJsonChecker {
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(Json::number_integer_t) { return true; }
  bool number_unsigned(Json::number_unsigned_t) { return true; }
  bool number_float(Json::number_float_t, const Json::string_t&) { return true; }
  bool string(Json::string_t&) { return true; }
  bool binary(Json::binary_t&) { return true; }
  bool start_object(std::size_t) { return true; }
  bool key(Json::string_t&) { return true; }
  bool end_object() { return true; }
  bool start_array(std::size_t) { return true; }
  bool end_array() { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) {
    error = ex.what();
    return false;
  }

  std::string error;
};

// nlohmann's messages read "[json.exception.parse_error.101] parse error at line 2, column 5:
// syntax error ...": split off the position.
ConfigError JsonSyntaxError(const std::string& file, const std::string& what) {
  ConfigError e{{file, 0, 0}, "", ""};
  std::string message = what;
  size_t at = what.find(" at line ");
  int line = 0;
  int col = 0;
  if (at != std::string::npos && std::sscanf(what.c_str() + at, " at line %d, column %d", &line,
                                             &col) == 2) {
    e.loc.line = line;
    e.loc.col = col;
  }
  if (at != std::string::npos) {
    if (size_t colon = what.find(": ", at); colon != std::string::npos) {
      message = what.substr(colon + 2);
    }
  } else if (!what.empty() && what[0] == '[') {  // "[json.exception.out_of_range.406] ..."
    if (size_t close = what.find("] "); close != std::string::npos) {
      message = what.substr(close + 2);
    }
  }
  e.message = "invalid JSON: " + message;
  return e;
}

bool IsHex4(std::string_view s) {
  if (s.size() < 4) return false;
  for (char c : s.substr(0, 4)) {
    bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (!hex) return false;
  }
  return true;
}

// yaml-cpp rejects UTF-16 surrogate pairs (`\ud83d\ude00`), which JSON needs for characters
// beyond the BMP: rewrite each pair as one YAML `\UXXXXXXXX` escape (2 bytes shorter, so later
// columns on that line shift by 2). REQUIRES: `text` is valid JSON.
std::string RewriteSurrogatePairs(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (!in_string) {
      if (c == '"') in_string = true;
      out.push_back(c);
      continue;
    }
    if (c == '"') {
      in_string = false;
      out.push_back(c);
      continue;
    }
    if (c != '\\' || i + 1 >= text.size()) {
      out.push_back(c);
      continue;
    }
    std::string_view rest = text.substr(i);
    if (rest.size() >= 12 && rest[1] == 'u' && IsHex4(rest.substr(2)) && rest[6] == '\\' &&
        rest[7] == 'u' && IsHex4(rest.substr(8))) {
      unsigned hi = std::stoul(std::string(rest.substr(2, 4)), nullptr, 16);
      unsigned lo = std::stoul(std::string(rest.substr(8, 4)), nullptr, 16);
      if (hi >= 0xD800 && hi <= 0xDBFF && lo >= 0xDC00 && lo <= 0xDFFF) {
        unsigned cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
        char buf[16];
        std::snprintf(buf, sizeof(buf), "\\U%08X", cp);
        out += buf;
        i += 11;
        continue;
      }
    }
    out.push_back(c);  // any other escape: copy `\` and the escaped character
    out.push_back(text[++i]);
  }
  return out;
}

// Shortest text that ResolvePlainScalar reads back as the same number.
std::string FormatDouble(double v) {
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  std::string out(buf, ec == std::errc() ? end : buf);
  if (out.find_first_of(".eE") == std::string::npos) out += ".0";  // stay a number
  return out;
}

// Post-parse environment substitution (see LoadJsonDocument).
class EnvResolver {
 public:
  EnvResolver(Diagnostics& d, const EnvLookup& lookup) : d_(d), lookup_(lookup) {}

  bool ok() const { return ok_; }

  void Walk(YamlNode node) {
    if (node.IsMap()) {
      for (size_t i = 0; i < node.size(); ++i) {
        Substitute(node.key(i), /*convert=*/false);
        Walk(node.value(i));
      }
    } else if (node.IsSequence()) {
      for (size_t i = 0; i < node.size(); ++i) Walk(node.item(i));
    } else if (node.IsScalar()) {
      Substitute(node, /*convert=*/true);
    }
  }

 private:
  void Substitute(YamlNode node, bool convert) {
    if (!node.IsScalar() || node.Tag() != "!") return;  // JSON strings are double-quoted
    SourceLoc loc = d_.Loc(node);
    if (loc.line > 0) ++loc.col;  // the text starts after the opening quote
    bool used = false;
    std::optional<std::string> value =
        SubstituteEnvInValue(node.Scalar(), loc, lookup_, &d_.errors(), &used);
    if (!value) {
      ok_ = false;
      return;
    }
    if (!used) return;
    node.SetScalar(*value);
    if (!convert) return;
    // APISIX: `tonumber(new_val) ~= nil` -> number; "true" / "false" -> boolean.
    PlainScalar number = LuaToNumber(*value);
    if (number.kind == PlainScalar::kInt) {
      node.SetScalar(std::to_string(number.i));
    } else if (number.kind == PlainScalar::kNumber) {
      node.SetScalar(FormatDouble(number.d));
    } else if (*value != "true" && *value != "false") {
      return;
    }
    node.SetTag("?");  // now a plain scalar: typed by KindOf
  }

  Diagnostics& d_;
  const EnvLookup& lookup_;
  bool ok_ = true;
};

}  // namespace

std::optional<YamlDocument> LoadJsonDocument(std::string_view text, Diagnostics& d,
                                           const EnvLookup& lookup) {
  StrictJsonChecker checker;
  bool valid = false;
  try {
    valid = Json::sax_parse(text, &checker);
  } catch (const std::exception& e) {
    checker.error = e.what();
  }
  if (!valid) {
    d.errors().push_back(JsonSyntaxError(d.file(), checker.error));
    return std::nullopt;
  }
  std::string error;
  YamlMark error_mark;
  std::optional<YamlDocument> doc =
      YamlDocument::Parse(RewriteSurrogatePairs(text), &error, &error_mark);
  if (!doc) {
    d.Error(d.Loc(error_mark), "", "cannot load JSON: " + error);
    return std::nullopt;
  }
  YamlNode root = doc->root();
  if (!root.IsMap()) {
    d.Error(root, "", std::string("top level must be a map, got ") + KindName(KindOf(root)));
    return std::nullopt;
  }
  EnvResolver env(d, lookup);
  env.Walk(root);
  if (!env.ok()) return std::nullopt;
  return doc;
}

}  // namespace turnpike::config
