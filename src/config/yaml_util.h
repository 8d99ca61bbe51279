// Helpers shared by the config parsers: diagnostics with file/line/path, typed reads of YAML
// values with APISIX (JSON schema) typing rules, and loading a document from raw text.
//
// Internal to config/. Control thread only. No function here lets a yaml-cpp exception escape.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/specs.h"
#include "config/yaml_tree.h"

namespace turnpike::config {

// Collects errors and warnings for one source file.
class Diagnostics {
 public:
  explicit Diagnostics(std::string file) : file_(std::move(file)) {}

  const std::string& file() const { return file_; }

  // Position of `node` (1-based); 0:0 when the node carries no position.
  SourceLoc Loc(const YamlNode& node) const { return Loc(node.Mark()); }
  SourceLoc Loc(YamlMark mark) const;

  void Error(const YamlNode& at, std::string path, std::string message);
  void Warning(const YamlNode& at, std::string path, std::string message);
  void Error(SourceLoc loc, std::string path, std::string message);

  bool has_errors() const { return !errors_.empty(); }
  std::vector<ConfigError>& errors() { return errors_; }
  std::vector<ConfigError>& warnings() { return warnings_; }

  // Moves `other`'s errors into this one, and its warnings too unless `drop_warnings` (used
  // for skipped items, whose warnings would only be noise).
  void Absorb(Diagnostics& other, bool drop_warnings);

 private:
  std::string file_;
  std::vector<ConfigError> errors_;
  std::vector<ConfigError> warnings_;
};

// Path helpers: ChildPath("routes[0]", "uri") == "routes[0].uri";
// keys that are not identifier-like are quoted: `nodes["127.0.0.1:80"]`.
std::string ChildPath(const std::string& parent, std::string_view key);
std::string IndexPath(const std::string& parent, size_t index);

// One value inside a map or list, with what is needed to report problems about it.
struct Field {
  std::string key;      // map key; "" for list items
  YamlNode key_node;  // the key (list items: the item itself)
  YamlNode value;
  std::string path;  // full YAML path of the value

  // The node to point at in messages: the key when the value is null (yaml-cpp places
  // empty values at the following token).
  const YamlNode& at() const { return value.IsNull() ? key_node : value; }
};

// The entries of a YAML map in file order. Reports non-scalar and duplicate keys as errors
// (duplicates are dropped). REQUIRES: map.IsMap().
std::vector<Field> MapEntries(const YamlNode& map, const std::string& path, Diagnostics& d);
// The items of a YAML list. REQUIRES: list.IsSequence().
std::vector<Field> ListItems(const YamlNode& list, const std::string& path);
// The field named `key`, or nullptr.
const Field* FindField(const std::vector<Field>& fields, std::string_view key);

// The JSON-schema type of a YAML value. Quoted and `!!str` scalars are always strings; plain
// scalars resolve as APISIX's loader (lyaml) resolves them: see ResolvePlainScalar in
// yaml_scalar.h (yes/no/on/off booleans, 0755 octal, 0x1F, 1_000, 1:30 sexagesimal, ...).
enum class ValueKind { kNull, kBool, kInt, kNumber, kString, kList, kMap };
ValueKind KindOf(const YamlNode& node);
const char* KindName(ValueKind kind);

// Typed reads. Each returns nullopt and records an error at field.path when the value has
// the wrong type or is out of range. Ints must be integer literals; numbers may be either.
std::optional<std::string> ReadString(const Field& f, Diagnostics& d);
std::optional<bool> ReadBool(const Field& f, Diagnostics& d);
std::optional<int64_t> ReadInt(const Field& f, Diagnostics& d, int64_t min, int64_t max);
std::optional<double> ReadNumber(const Field& f, Diagnostics& d, double min, bool exclusive_min);
// A string that must be one of `allowed`.
std::optional<std::string> ReadEnum(const Field& f, Diagnostics& d,
                                    std::initializer_list<std::string_view> allowed);
// True when the value is a map / list; otherwise records a type error.
bool ExpectMap(const Field& f, Diagnostics& d);
bool ExpectList(const Field& f, Diagnostics& d);

// Records "wrong type: expected <expected>, got <actual>".
void TypeError(const Field& f, Diagnostics& d, const char* expected);

// Limits of YamlToJson / ReadJson (aliases can make a small file expand enormously).
inline constexpr int kMaxJsonDepth = 256;
inline constexpr size_t kMaxJsonValues = 1000000;

// Converts a YAML value to JSON, typing scalars the way APISIX's YAML loader (lyaml) does:
// plain scalars resolve as in KindOf (integer -> JSON integer, number -> JSON number, possibly
// inf/NaN for `.inf`/`.nan`; boolean; null), quoted and `!!str` scalars are strings, maps are
// objects keyed by the key's text, sequences are arrays, aliases are expanded. `<<` merge keys
// work as in lyaml: the merged map's keys are added unless the map already has them (earlier
// merges and explicit keys win). A repeated key keeps its last value. Returns a discarded
// value (`is_discarded()`) when a map key is not a scalar, or nesting exceeds kMaxJsonDepth
// (e.g. a recursive alias), or more than kMaxJsonValues values would be produced.
nlohmann::json YamlToJson(const YamlNode& node);
// The same conversion written straight to compact JSON text (appended to `out`), without
// building a tree: several times cheaper for the common case. Strings keep their bytes (a
// reader must expect invalid UTF-8). Where YamlToJson would fail, appends `null`.
void AppendYamlAsJson(const YamlNode& node, std::string* out);
// The same conversion for a field, reporting each problem at its position and YAML path
// (e.g. "routes[0].plugins.p.a[2]"); a repeated key is an error here, as in MapEntries.
// Returns nullopt after recording the errors.
std::optional<nlohmann::json> ReadJson(const Field& f, Diagnostics& d);

// Reads the whole file into `out`; on failure returns false and records a file-level error.
bool ReadWholeFile(const std::string& path, Diagnostics& d, std::string* out);

// Applies ${{VAR}} substitution (process environment) and parses the text as YAML. The top
// level must be a map or empty (an empty document yields an undefined root); a second, non-empty
// document (after `---`) is an error. On failure returns
// nullopt after recording a file-level error.
std::optional<YamlDocument> LoadDocument(std::string_view text, Diagnostics& d);

}  // namespace turnpike::config
