#include "config/yaml_util.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

#include "config/env_subst.h"

namespace turnpike::config {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Matches [-+]?[0-9]+.
bool LooksLikeInt(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

// Matches [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? (YAML core schema float,
// without .inf/.nan which no config field accepts).
bool LooksLikeNumber(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  size_t int_digits = 0;
  while (i < s.size() && IsDigit(s[i])) ++i, ++int_digits;
  size_t frac_digits = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && IsDigit(s[i])) ++i, ++frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && IsDigit(s[i])) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

std::string_view StripPlus(std::string_view s) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  return s;
}

std::optional<int64_t> ParseInt(std::string_view s) {
  s = StripPlus(s);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> ParseDouble(std::string_view s) {
  s = StripPlus(s);
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<bool> ParseBool(std::string_view s) {
  static constexpr std::string_view kTrue[] = {"true", "True", "TRUE", "yes", "Yes",
                                               "YES",  "on",   "On",   "ON"};
  static constexpr std::string_view kFalse[] = {"false", "False", "FALSE", "no", "No",
                                                "NO",    "off",   "Off",   "OFF"};
  for (std::string_view t : kTrue) {
    if (s == t) return true;
  }
  for (std::string_view f : kFalse) {
    if (s == f) return false;
  }
  return std::nullopt;
}

bool IsQuotedOrStr(const YAML::Node& node) {
  const std::string& tag = node.Tag();
  return tag == "!" || tag == "tag:yaml.org,2002:str";
}

std::string FormatNumber(double v) {
  if (std::floor(v) == v && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

}  // namespace

std::string ConfigError::ToString() const {
  std::string out = loc.file;
  if (loc.line > 0) {
    out += ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
  }
  out += ": ";
  if (!path.empty()) out += path + ": ";
  out += message;
  return out;
}

SourceLoc Diagnostics::Loc(const YAML::Node& node) const {
  SourceLoc loc{file_, 0, 0};
  if (!node.IsDefined()) return loc;
  YAML::Mark mark = node.Mark();
  if (mark.is_null() || mark.line < 0) return loc;
  loc.line = mark.line + 1;
  loc.col = mark.column + 1;
  return loc;
}

void Diagnostics::Error(const YAML::Node& at, std::string path, std::string message) {
  errors_.push_back({Loc(at), std::move(path), std::move(message)});
}

void Diagnostics::Warning(const YAML::Node& at, std::string path, std::string message) {
  warnings_.push_back({Loc(at), std::move(path), std::move(message)});
}

void Diagnostics::Error(SourceLoc loc, std::string path, std::string message) {
  errors_.push_back({std::move(loc), std::move(path), std::move(message)});
}

void Diagnostics::Absorb(Diagnostics& other, bool drop_warnings) {
  for (ConfigError& e : other.errors_) errors_.push_back(std::move(e));
  if (!drop_warnings) {
    for (ConfigError& w : other.warnings_) warnings_.push_back(std::move(w));
  }
  other.errors_.clear();
  other.warnings_.clear();
}

std::string ChildPath(const std::string& parent, std::string_view key) {
  bool plain = !key.empty();
  for (char c : key) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c) || c == '_' || c == '-';
    if (!ok) plain = false;
  }
  if (plain) return parent.empty() ? std::string(key) : parent + "." + std::string(key);
  std::string out = parent + "[\"";
  for (char c : key) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out += "\"]";
  return out;
}

std::string IndexPath(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

std::vector<Field> MapEntries(const YAML::Node& map, const std::string& path, Diagnostics& d) {
  std::vector<Field> fields;
  for (auto it = map.begin(); it != map.end(); ++it) {
    // Copies: the iterator yields a temporary proxy.
    YAML::Node key = it->first;
    YAML::Node value = it->second;
    if (!key.IsScalar()) {
      d.Error(key, path, "map keys must be strings");
      continue;
    }
    Field f{key.Scalar(), key, value, ChildPath(path, key.Scalar())};
    if (FindField(fields, f.key) != nullptr) {
      d.Error(key, f.path, "duplicate key");
      continue;
    }
    fields.push_back(std::move(f));
  }
  return fields;
}

std::vector<Field> ListItems(const YAML::Node& list, const std::string& path) {
  std::vector<Field> items;
  items.reserve(list.size());
  size_t i = 0;
  for (auto it = list.begin(); it != list.end(); ++it, ++i) {
    YAML::Node item = *it;
    items.push_back(Field{"", item, item, IndexPath(path, i)});
  }
  return items;
}

const Field* FindField(const std::vector<Field>& fields, std::string_view key) {
  for (const Field& f : fields) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

ValueKind KindOf(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return ValueKind::kNull;
  if (node.IsSequence()) return ValueKind::kList;
  if (node.IsMap()) return ValueKind::kMap;
  if (IsQuotedOrStr(node)) return ValueKind::kString;
  const std::string& s = node.Scalar();
  if (ParseBool(s)) return ValueKind::kBool;
  if (LooksLikeInt(s) && ParseInt(s)) return ValueKind::kInt;
  if (LooksLikeNumber(s)) return ValueKind::kNumber;
  return ValueKind::kString;
}

const char* KindName(ValueKind kind) {
  switch (kind) {
    case ValueKind::kNull:
      return "null";
    case ValueKind::kBool:
      return "boolean";
    case ValueKind::kInt:
      return "integer";
    case ValueKind::kNumber:
      return "number";
    case ValueKind::kString:
      return "string";
    case ValueKind::kList:
      return "list";
    case ValueKind::kMap:
      return "map";
  }
  return "unknown";
}

void TypeError(const Field& f, Diagnostics& d, const char* expected) {
  d.Error(f.at(), f.path,
          std::string("wrong type: expected ") + expected + ", got " + KindName(KindOf(f.value)));
}

std::optional<std::string> ReadString(const Field& f, Diagnostics& d) {
  if (KindOf(f.value) != ValueKind::kString) {
    TypeError(f, d, "string");
    return std::nullopt;
  }
  return f.value.Scalar();
}

std::optional<bool> ReadBool(const Field& f, Diagnostics& d) {
  if (KindOf(f.value) != ValueKind::kBool) {
    TypeError(f, d, "boolean");
    return std::nullopt;
  }
  return ParseBool(f.value.Scalar());
}

std::optional<int64_t> ReadInt(const Field& f, Diagnostics& d, int64_t min, int64_t max) {
  if (KindOf(f.value) != ValueKind::kInt) {
    TypeError(f, d, "integer");
    return std::nullopt;
  }
  int64_t v = *ParseInt(f.value.Scalar());
  if (v < min || v > max) {
    if (max == std::numeric_limits<int64_t>::max()) {
      d.Error(f.at(), f.path, "must be >= " + std::to_string(min));
    } else {
      d.Error(f.at(), f.path,
              "must be between " + std::to_string(min) + " and " + std::to_string(max));
    }
    return std::nullopt;
  }
  return v;
}

std::optional<double> ReadNumber(const Field& f, Diagnostics& d, double min, bool exclusive_min) {
  ValueKind kind = KindOf(f.value);
  if (kind != ValueKind::kInt && kind != ValueKind::kNumber) {
    TypeError(f, d, "number");
    return std::nullopt;
  }
  std::optional<double> v = ParseDouble(f.value.Scalar());
  if (!v) {
    d.Error(f.at(), f.path, "number out of range");
    return std::nullopt;
  }
  if (exclusive_min ? *v <= min : *v < min) {
    d.Error(f.at(), f.path,
            std::string(exclusive_min ? "must be > " : "must be >= ") + FormatNumber(min));
    return std::nullopt;
  }
  return v;
}

std::optional<std::string> ReadEnum(const Field& f, Diagnostics& d,
                                    std::initializer_list<std::string_view> allowed) {
  std::optional<std::string> s = ReadString(f, d);
  if (!s) return std::nullopt;
  std::string list;
  for (std::string_view a : allowed) {
    if (*s == a) return s;
    if (!list.empty()) list += ", ";
    list += a;
  }
  d.Error(f.at(), f.path, "invalid value \"" + *s + "\": must be one of " + list);
  return std::nullopt;
}

bool ExpectMap(const Field& f, Diagnostics& d) {
  if (f.value.IsMap()) return true;
  TypeError(f, d, "map");
  return false;
}

bool ExpectList(const Field& f, Diagnostics& d) {
  if (f.value.IsSequence()) return true;
  TypeError(f, d, "list");
  return false;
}

bool ReadWholeFile(const std::string& path, Diagnostics& d, std::string* out) {
  std::unique_ptr<FILE, int (*)(FILE*)> fp(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!fp) {
    d.Error(SourceLoc{d.file(), 0, 0}, "",
            std::string("cannot open file: ") + std::strerror(errno));
    return false;
  }
  out->clear();
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), fp.get())) > 0) out->append(buf, n);
  if (std::ferror(fp.get())) {
    d.Error(SourceLoc{d.file(), 0, 0}, "",
            std::string("cannot read file: ") + std::strerror(errno));
    return false;
  }
  return true;
}

std::optional<YAML::Node> LoadDocument(std::string_view text, Diagnostics& d) {
  std::optional<std::string> substituted = SubstituteEnv(text, d.file(), ProcessEnv(), &d.errors());
  if (!substituted) return std::nullopt;
  YAML::Node root;
  try {
    std::vector<YAML::Node> docs = YAML::LoadAll(*substituted);
    for (size_t i = 1; i < docs.size(); ++i) {
      if (docs[i].IsNull()) continue;  // a stray `---` before the end is harmless
      d.Error(docs[i], "", "multiple YAML documents in one file are not supported");
      return std::nullopt;
    }
    if (!docs.empty()) root = docs[0];
  } catch (const YAML::Exception& e) {
    SourceLoc loc{d.file(), 0, 0};
    if (!e.mark.is_null()) loc = SourceLoc{d.file(), e.mark.line + 1, e.mark.column + 1};
    d.Error(loc, "", "invalid YAML: " + e.msg);
    return std::nullopt;
  } catch (const std::exception& e) {
    d.Error(SourceLoc{d.file(), 0, 0}, "", std::string("invalid YAML: ") + e.what());
    return std::nullopt;
  }
  if (root.IsNull() || root.IsMap()) return root;
  d.Error(root, "", std::string("top level must be a map, got ") + KindName(KindOf(root)));
  return std::nullopt;
}

}  // namespace turnpike::config
