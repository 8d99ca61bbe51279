// A read-mostly YAML document tree built straight from yaml-cpp's parser events.
//
// yaml-cpp's own node tree (YAML::Load) costs as much as the parse itself: every node is a
// reference-counted graph object joined into a shared memory pool, and tearing the tree down
// is another walk. A 50k-route apisix.yaml spent ~40% of its load in building and freeing
// that tree. This tree keeps what the config parsers use (type, scalar text, tag, position,
// children in file order, aliases shared) in one arena: nodes live in a deque, the children
// of every collection are one contiguous slice of a single pointer array, and the whole
// document is freed in a handful of deallocations.
//
// Internal to config/. Control thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace turnpike::config {

// 0-based line and column, as yaml-cpp reports them; -1 when unknown.
struct YamlMark {
  int line = -1;
  int column = -1;
};

namespace yaml_tree_internal {
struct NodeData;
}

// A handle to one node of a YamlDocument (a pointer; copy freely). A default-constructed
// handle is "undefined" and reads as null. Valid while its document lives.
class YamlNode {
 public:
  YamlNode() = default;

  bool IsDefined() const { return n_ != nullptr; }
  // Undefined, or an empty value / explicit null node (`a:`). A plain `null` or `~` scalar
  // is a scalar here, as in yaml-cpp; its JSON type is decided by the scalar resolver.
  bool IsNull() const;
  bool IsScalar() const;
  bool IsSequence() const;
  bool IsMap() const;

  // The scalar's text; empty for other nodes.
  const std::string& Scalar() const;
  // yaml-cpp's tag: "?" for plain scalars, "!" for quoted ones, the resolved tag otherwise
  // ("tag:yaml.org,2002:str" for `!!str`); empty when there is none.
  const std::string& Tag() const;
  YamlMark Mark() const;

  // Sequences: items. Maps: entries (key/value pairs, in file order, duplicates kept).
  size_t size() const;
  YamlNode item(size_t i) const;   // REQUIRES: IsSequence(), i < size()
  YamlNode key(size_t i) const;    // REQUIRES: IsMap(), i < size()
  YamlNode value(size_t i) const;  // REQUIRES: IsMap(), i < size()
  // The value of the first entry whose key is the scalar `k`; undefined when absent or when
  // this is not a map.
  YamlNode operator[](std::string_view k) const;

  // Rewrites a scalar (used by post-parse environment substitution). REQUIRES: IsScalar().
  void SetScalar(std::string value) const;
  void SetTag(std::string tag) const;

 private:
  friend class YamlDocument;
  explicit YamlNode(yaml_tree_internal::NodeData* n) : n_(n) {}
  yaml_tree_internal::NodeData* n_ = nullptr;
};

namespace yaml_tree_internal {
enum class Type : uint8_t { kNull, kScalar, kSequence, kMap };
struct NodeData {
  Type type = Type::kNull;
  YamlMark mark;
  std::string scalar;
  std::string tag;
  // Children: sequence items, or key0, value0, key1, value1, ... for maps.
  NodeData* const* kids = nullptr;
  uint32_t kids_begin = 0;  // offset in the document's kid array while building
  uint32_t kid_count = 0;
};
}  // namespace yaml_tree_internal

// One parsed YAML document (movable; node handles stay valid across moves).
class YamlDocument {
 public:
  // Parses every document of `text`. On a syntax error returns nullopt and sets `error`
  // (yaml-cpp's message) and `error_mark`.
  static std::optional<std::vector<YamlDocument>> ParseAll(std::string_view text,
                                                           std::string* error,
                                                           YamlMark* error_mark);
  // The first document only (an empty text yields an undefined root); later documents are
  // still parsed and must be well-formed. For tests and simple callers.
  static std::optional<YamlDocument> Parse(std::string_view text, std::string* error = nullptr,
                                           YamlMark* error_mark = nullptr);

  // The same tree as Parse, built faster for large documents of one common shape: a block
  // map at the top holding a long block sequence (an apisix.yaml's `routes:`). The sequence
  // is cut at item boundaries into small pieces that the calling thread and up to
  // `threads - 1` helper threads (at the lowest CPU priority, so that they only use idle
  // CPUs) take from a queue; positions are those of the whole text. Returns
  // nullopt whenever the text is not plainly of that shape (anchors, aliases, tags,
  // directives, several documents, small input...) or any piece fails to parse: the caller
  // then parses the whole text with ParseAll, which also reports any error.
  static std::optional<YamlDocument> ParseSplit(std::string_view text, int threads);

  YamlDocument() = default;
  YamlDocument(YamlDocument&&) = default;
  YamlDocument& operator=(YamlDocument&&) = default;

  YamlNode root() const { return YamlNode(root_); }

 private:
  friend class YamlTreeBuilder;
  std::deque<yaml_tree_internal::NodeData> nodes_;
  std::vector<yaml_tree_internal::NodeData*> kids_;
  yaml_tree_internal::NodeData* root_ = nullptr;
  std::vector<YamlDocument> parts_;  // ParseSplit: documents owning the sequence's items

  // Points every collection at its slice of kids_, once kids_ stops growing.
  void FixKids();

  static std::optional<std::vector<YamlDocument>> ParseAllAt(std::string_view text,
                                                             int line_offset, std::string* error,
                                                             YamlMark* error_mark);
};

}  // namespace turnpike::config
