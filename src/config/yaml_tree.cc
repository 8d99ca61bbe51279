#include "config/yaml_tree.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <exception>
#include <istream>
#include <streambuf>
#include <utility>

namespace turnpike::config {

using yaml_tree_internal::NodeData;
using yaml_tree_internal::Type;

namespace {

const std::string kEmpty;

// An istream over caller-owned bytes, so the text is not copied into a stringstream.
class ViewBuf : public std::streambuf {
 public:
  explicit ViewBuf(std::string_view text) {
    char* begin = const_cast<char*>(text.data());  // read-only use: get area only
    setg(begin, begin, begin + text.size());
  }
};

YamlMark ToMark(const YAML::Mark& m) { return YamlMark{m.line, m.column}; }

}  // namespace

bool YamlNode::IsNull() const { return n_ == nullptr || n_->type == Type::kNull; }
bool YamlNode::IsScalar() const { return n_ != nullptr && n_->type == Type::kScalar; }
bool YamlNode::IsSequence() const { return n_ != nullptr && n_->type == Type::kSequence; }
bool YamlNode::IsMap() const { return n_ != nullptr && n_->type == Type::kMap; }

const std::string& YamlNode::Scalar() const {
  return n_ != nullptr && n_->type == Type::kScalar ? n_->scalar : kEmpty;
}

const std::string& YamlNode::Tag() const { return n_ != nullptr ? n_->tag : kEmpty; }

YamlMark YamlNode::Mark() const { return n_ != nullptr ? n_->mark : YamlMark{}; }

size_t YamlNode::size() const {
  if (n_ == nullptr) return 0;
  if (n_->type == Type::kSequence) return n_->kid_count;
  if (n_->type == Type::kMap) return n_->kid_count / 2;
  return 0;
}

YamlNode YamlNode::item(size_t i) const { return YamlNode(n_->kids[i]); }
YamlNode YamlNode::key(size_t i) const { return YamlNode(n_->kids[2 * i]); }
YamlNode YamlNode::value(size_t i) const { return YamlNode(n_->kids[2 * i + 1]); }

YamlNode YamlNode::operator[](std::string_view k) const {
  if (!IsMap()) return YamlNode();
  for (size_t i = 0; i < size(); ++i) {
    YamlNode kn = key(i);
    if (kn.IsScalar() && kn.Scalar() == k) return value(i);
  }
  return YamlNode();
}

void YamlNode::SetScalar(std::string value) const { n_->scalar = std::move(value); }
void YamlNode::SetTag(std::string tag) const { n_->tag = std::move(tag); }

// Turns parser events into a YamlDocument. Children are collected on one scratch stack: a
// collection's children are the entries above the mark taken when it opened, and move to the
// document's kid array (as one slice) when it closes. Nested collections close first, so every
// slice is contiguous. Slices are addressed by offset until the end, since the array grows.
class YamlTreeBuilder : public YAML::EventHandler {
 public:
  explicit YamlTreeBuilder(YamlDocument* doc) : doc_(doc) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    NodeData* n = New(Type::kNull, mark, anchor);
    Add(n);
  }

  void OnAlias(const YAML::Mark&, YAML::anchor_t anchor) override {
    // yaml-cpp has already rejected unknown anchors.
    Add(anchor < anchors_.size() ? anchors_[anchor] : New(Type::kNull, YAML::Mark(), 0));
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    NodeData* n = New(Type::kScalar, mark, anchor);
    n->tag = tag;
    n->scalar = value;
    Add(n);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(Type::kSequence, mark, tag, anchor);
  }
  void OnSequenceEnd() override { Close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(Type::kMap, mark, tag, anchor);
  }
  void OnMapEnd() override { Close(); }

  // Fixes every collection's kid pointer once the kid array stops growing.
  void Finish() {
    NodeData* const* base = doc_->kids_.data();
    for (NodeData& n : doc_->nodes_) {
      if (n.type == Type::kSequence || n.type == Type::kMap) n.kids = base + n.kids_begin;
    }
  }

  NodeData* root() const { return root_; }

 private:
  NodeData* New(Type type, const YAML::Mark& mark, YAML::anchor_t anchor) {
    NodeData& n = doc_->nodes_.emplace_back();
    n.type = type;
    n.mark = ToMark(mark);
    if (anchor != YAML::NullAnchor) {
      if (anchors_.size() <= anchor) anchors_.resize(anchor + 1, nullptr);
      anchors_[anchor] = &n;
    }
    return &n;
  }

  void Add(NodeData* n) {
    if (open_.empty()) {
      if (root_ == nullptr) root_ = n;
      return;
    }
    scratch_.push_back(n);
  }

  void Open(Type type, const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor) {
    NodeData* n = New(type, mark, anchor);
    n->tag = tag;
    Add(n);
    open_.push_back({n, scratch_.size()});
  }

  void Close() {
    auto [n, start] = open_.back();
    open_.pop_back();
    n->kids_begin = static_cast<uint32_t>(doc_->kids_.size());
    n->kid_count = static_cast<uint32_t>(scratch_.size() - start);
    doc_->kids_.insert(doc_->kids_.end(), scratch_.begin() + static_cast<ptrdiff_t>(start),
                       scratch_.end());
    scratch_.resize(start);
  }

  YamlDocument* doc_;
  NodeData* root_ = nullptr;
  std::vector<NodeData*> anchors_;  // by yaml-cpp anchor id (per document, from 1)
  std::vector<std::pair<NodeData*, size_t>> open_;
  std::vector<NodeData*> scratch_;
};

std::optional<std::vector<YamlDocument>> YamlDocument::ParseAll(std::string_view text,
                                                                std::string* error,
                                                                YamlMark* error_mark) {
  std::vector<YamlDocument> docs;
  try {
    ViewBuf buf(text);
    std::istream in(&buf);
    YAML::Parser parser(in);
    while (true) {
      YamlDocument doc;
      YamlTreeBuilder builder(&doc);
      if (!parser.HandleNextDocument(builder)) break;
      builder.Finish();
      doc.root_ = builder.root();
      docs.push_back(std::move(doc));
    }
  } catch (const YAML::Exception& e) {
    if (error != nullptr) *error = e.msg;
    if (error_mark != nullptr) *error_mark = e.mark.is_null() ? YamlMark{} : ToMark(e.mark);
    return std::nullopt;
  } catch (const std::exception& e) {
    if (error != nullptr) *error = e.what();
    if (error_mark != nullptr) *error_mark = YamlMark{};
    return std::nullopt;
  }
  return docs;
}

std::optional<YamlDocument> YamlDocument::Parse(std::string_view text, std::string* error,
                                                YamlMark* error_mark) {
  std::optional<std::vector<YamlDocument>> docs = ParseAll(text, error, error_mark);
  if (!docs) return std::nullopt;
  if (docs->empty()) return YamlDocument();
  return std::move(docs->front());
}

}  // namespace turnpike::config
