#include "config/yaml_util.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <thread>

#include "config/env_subst.h"
#include "config/yaml_scalar.h"

namespace turnpike::config {
namespace {

bool IsQuotedOrStr(const YamlNode& node) {
  const std::string& tag = node.Tag();
  return tag == "!" || tag == "tag:yaml.org,2002:str";
}

// The typed value of a scalar node: quoted and `!!str` scalars are strings, plain ones
// resolve as lyaml does. REQUIRES: node.IsScalar().
PlainScalar ScalarOf(const YamlNode& node) {
  if (IsQuotedOrStr(node)) return PlainScalar{};
  return ResolvePlainScalar(node.Scalar());
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

SourceLoc Diagnostics::Loc(YamlMark mark) const {
  SourceLoc loc{file_, 0, 0};
  if (mark.line < 0) return loc;
  loc.line = mark.line + 1;
  loc.col = mark.column + 1;
  return loc;
}

void Diagnostics::Error(const YamlNode& at, std::string path, std::string message) {
  errors_.push_back({Loc(at), std::move(path), std::move(message)});
}

void Diagnostics::Warning(const YamlNode& at, std::string path, std::string message) {
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
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
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

std::vector<Field> MapEntries(const YamlNode& map, const std::string& path, Diagnostics& d) {
  std::vector<Field> fields;
  fields.reserve(map.size());
  for (size_t i = 0; i < map.size(); ++i) {
    YamlNode key = map.key(i);
    YamlNode value = map.value(i);
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

std::vector<Field> ListItems(const YamlNode& list, const std::string& path) {
  std::vector<Field> items;
  items.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    YamlNode item = list.item(i);
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

ValueKind KindOf(const YamlNode& node) {
  if (!node.IsDefined() || node.IsNull()) return ValueKind::kNull;
  if (node.IsSequence()) return ValueKind::kList;
  if (node.IsMap()) return ValueKind::kMap;
  switch (ScalarOf(node).kind) {
    case PlainScalar::kNull:
      return ValueKind::kNull;
    case PlainScalar::kBool:
      return ValueKind::kBool;
    case PlainScalar::kInt:
      return ValueKind::kInt;
    case PlainScalar::kNumber:
      return ValueKind::kNumber;
    case PlainScalar::kString:
      break;
  }
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
  return ScalarOf(f.value).b;
}

std::optional<int64_t> ReadInt(const Field& f, Diagnostics& d, int64_t min, int64_t max) {
  if (KindOf(f.value) != ValueKind::kInt) {
    TypeError(f, d, "integer");
    return std::nullopt;
  }
  int64_t v = ScalarOf(f.value).i;
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
  PlainScalar scalar = ScalarOf(f.value);
  double v = kind == ValueKind::kInt ? static_cast<double>(scalar.i) : scalar.d;
  if (!std::isfinite(v)) {
    d.Error(f.at(), f.path, "number out of range");
    return std::nullopt;
  }
  if (exclusive_min ? v <= min : v < min) {
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

namespace {

// YAML -> JSON with optional diagnostics. Structural limits abort the conversion; key
// problems are reported one by one (with diagnostics) before failing.
class JsonConverter {
 public:
  explicit JsonConverter(Diagnostics* d) : d_(d) {}

  std::optional<nlohmann::json> Convert(const YamlNode& node, const std::string& path,
                                        int depth) {
    if (aborted_) return std::nullopt;
    if (depth >= kMaxJsonDepth) {
      return Abort(node, path,
                   "nested more than " + std::to_string(kMaxJsonDepth) +
                       " levels deep (a recursive alias?)");
    }
    if (++values_ > kMaxJsonValues) {
      return Abort(node, path,
                   "more than " + std::to_string(kMaxJsonValues) +
                       " values (after expanding aliases)");
    }
    if (!node.IsDefined() || node.IsNull()) return nlohmann::json(nullptr);
    if (node.IsSequence()) {
      nlohmann::json out = nlohmann::json::array();
      bool ok = true;
      for (size_t i = 0; i < node.size(); ++i) {
        std::optional<nlohmann::json> item = Convert(node.item(i), IndexPath(path, i), depth + 1);
        if (aborted_) return std::nullopt;
        if (!item) ok = false;
        if (ok) out.push_back(std::move(*item));
      }
      if (!ok) return std::nullopt;
      return out;
    }
    if (node.IsMap()) return ConvertMap(node, path, depth);
    PlainScalar scalar = ScalarOf(node);
    switch (scalar.kind) {
      case PlainScalar::kNull:
        return nlohmann::json(nullptr);
      case PlainScalar::kBool:
        return nlohmann::json(scalar.b);
      case PlainScalar::kInt:
        return nlohmann::json(scalar.i);
      case PlainScalar::kNumber:
        return nlohmann::json(scalar.d);
      case PlainScalar::kString:
        break;
    }
    return nlohmann::json(node.Scalar());
  }

 private:
  std::optional<nlohmann::json> ConvertMap(const YamlNode& node, const std::string& path,
                                           int depth) {
    nlohmann::json out = nlohmann::json::object();
    std::vector<std::string> explicit_keys;
    bool ok = true;
    for (size_t i = 0; i < node.size(); ++i) {
      YamlNode key = node.key(i);
      YamlNode value = node.value(i);
      if (!key.IsScalar()) {
        Report(key, path, "map keys must be strings");
        ok = false;
        continue;
      }
      const std::string& name = key.Scalar();
      std::string child = ChildPath(path, name);
      if (name == "<<") {  // merge key (lyaml): earlier and explicit keys win
        if (!Merge(value, child, depth, &out)) ok = false;
        continue;
      }
      if (std::find(explicit_keys.begin(), explicit_keys.end(), name) != explicit_keys.end() &&
          d_ != nullptr) {
        Report(key, child, "duplicate key");
        ok = false;
        continue;
      }
      explicit_keys.push_back(name);
      std::optional<nlohmann::json> v = Convert(value, child, depth + 1);
      if (!v) {
        if (aborted_) return std::nullopt;
        ok = false;
        continue;
      }
      out[name] = std::move(*v);
    }
    if (!ok) return std::nullopt;
    return out;
  }

  bool Merge(const YamlNode& value, const std::string& path, int depth, nlohmann::json* out) {
    std::vector<YamlNode> sources;
    if (value.IsMap()) {
      sources.push_back(value);
    } else if (value.IsSequence()) {
      for (size_t i = 0; i < value.size(); ++i) sources.push_back(value.item(i));
    }
    if (sources.empty() && !value.IsSequence()) {
      Report(value, path, "a merge key (<<) needs a map or a list of maps");
      return false;
    }
    for (const YamlNode& source : sources) {
      if (!source.IsMap()) {
        Report(source, path, "a merge key (<<) needs a map or a list of maps");
        return false;
      }
      std::optional<nlohmann::json> merged = Convert(source, path, depth + 1);
      if (!merged) return false;
      for (auto& [k, v] : merged->items()) {
        if (!out->contains(k)) (*out)[k] = v;
      }
    }
    return true;
  }

  void Report(const YamlNode& at, const std::string& path, std::string message) {
    if (d_ != nullptr) d_->Error(at, path, std::move(message));
  }

  std::nullopt_t Abort(const YamlNode& at, const std::string& path, std::string message) {
    Report(at, path, std::move(message));
    aborted_ = true;
    return std::nullopt;
  }

  Diagnostics* d_;
  size_t values_ = 0;
  bool aborted_ = false;
};

}  // namespace

namespace {

// JSON text of `s` (quoted), escaping what RFC 8259 requires; other bytes pass as they are.
void AppendJsonString(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (u < 0x20) {
      out->append("\\u00");
      out->push_back(kHex[u >> 4]);
      out->push_back(kHex[u & 15]);
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

// AppendYamlAsJson's walk; false on what it leaves to YamlToJson (merge keys, keys that are
// not scalars, the limits).
bool AppendJson(const YamlNode& node, int depth, size_t* values, std::string* out) {
  if (depth >= kMaxJsonDepth || ++*values > kMaxJsonValues) return false;
  if (!node.IsDefined() || node.IsNull()) {
    out->append("null");
    return true;
  }
  if (node.IsSequence()) {
    out->push_back('[');
    for (size_t i = 0; i < node.size(); ++i) {
      if (i > 0) out->push_back(',');
      if (!AppendJson(node.item(i), depth + 1, values, out)) return false;
    }
    out->push_back(']');
    return true;
  }
  if (node.IsMap()) {
    out->push_back('{');
    for (size_t i = 0; i < node.size(); ++i) {
      YamlNode key = node.key(i);
      if (!key.IsScalar() || key.Scalar() == "<<") return false;
      if (i > 0) out->push_back(',');
      AppendJsonString(key.Scalar(), out);
      out->push_back(':');
      if (!AppendJson(node.value(i), depth + 1, values, out)) return false;
    }
    out->push_back('}');
    return true;
  }
  PlainScalar scalar = ScalarOf(node);
  switch (scalar.kind) {
    case PlainScalar::kNull:
      out->append("null");
      return true;
    case PlainScalar::kBool:
      out->append(scalar.b ? "true" : "false");
      return true;
    case PlainScalar::kInt:
      out->append(std::to_string(scalar.i));
      return true;
    case PlainScalar::kNumber:
      out->append(nlohmann::json(scalar.d).dump());  // inf and NaN: null, as the tree dumps them
      return true;
    case PlainScalar::kString:
      break;
  }
  AppendJsonString(node.Scalar(), out);
  return true;
}

}  // namespace

void AppendYamlAsJson(const YamlNode& node, std::string* out) {
  size_t start = out->size();
  size_t values = 0;
  if (AppendJson(node, 0, &values, out)) return;
  out->resize(start);
  nlohmann::json tree = YamlToJson(node);
  out->append(tree.is_discarded()
                  ? "null"
                  : tree.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

nlohmann::json YamlToJson(const YamlNode& node) {
  JsonConverter converter(nullptr);
  std::optional<nlohmann::json> out = converter.Convert(node, "", 0);
  if (!out) return nlohmann::json(nlohmann::json::value_t::discarded);
  return std::move(*out);
}

std::optional<nlohmann::json> ReadJson(const Field& f, Diagnostics& d) {
  JsonConverter converter(&d);
  return converter.Convert(f.value, f.path, 0);
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

std::optional<YamlDocument> LoadDocument(std::string_view text, Diagnostics& d) {
  std::optional<std::string> substituted = SubstituteEnv(text, d.file(), ProcessEnv(), &d.errors());
  if (!substituted) return std::nullopt;
  // A large apisix.yaml is parsed in pieces on several threads (yaml-cpp's scanner is most of
  // a reload's cost); anything unusual, including every error, goes through the whole-text
  // parse below.
  int threads = static_cast<int>(std::min(std::thread::hardware_concurrency(), 8u));
  if (std::optional<YamlDocument> split = YamlDocument::ParseSplit(*substituted, threads)) {
    return split;
  }
  std::string error;
  YamlMark error_mark;
  std::optional<std::vector<YamlDocument>> docs =
      YamlDocument::ParseAll(*substituted, &error, &error_mark);
  if (!docs) {
    d.Error(d.Loc(error_mark), "", "invalid YAML: " + error);
    return std::nullopt;
  }
  for (size_t i = 1; i < docs->size(); ++i) {
    YamlNode extra = (*docs)[i].root();
    if (extra.IsNull()) continue;  // a stray `---` before the end is harmless
    d.Error(extra, "", "multiple YAML documents in one file are not supported");
    return std::nullopt;
  }
  if (docs->empty()) return YamlDocument();
  YamlNode root = docs->front().root();
  if (root.IsNull() || root.IsMap()) return std::move(docs->front());
  d.Error(root, "", std::string("top level must be a map, got ") + KindName(KindOf(root)));
  return std::nullopt;
}

}  // namespace turnpike::config
