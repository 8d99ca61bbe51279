#include "config/yaml_tree.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <istream>
#include <streambuf>
#include <thread>
#include <utility>

#include "base/courtesy.h"

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

void YamlDocument::FixKids() {
  NodeData* const* base = kids_.data();
  for (NodeData& n : nodes_) {
    if (n.type == Type::kSequence || n.type == Type::kMap) n.kids = base + n.kids_begin;
  }
}

void YamlNode::SetScalar(std::string value) const { n_->scalar = std::move(value); }
void YamlNode::SetTag(std::string tag) const { n_->tag = std::move(tag); }

// Turns parser events into a YamlDocument. Children are collected on one scratch stack: a
// collection's children are the entries above the mark taken when it opened, and move to the
// document's kid array (as one slice) when it closes. Nested collections close first, so every
// slice is contiguous. Slices are addressed by offset until FixKids(), since the array grows.
class YamlTreeBuilder : public YAML::EventHandler {
 public:
  YamlTreeBuilder(YamlDocument* doc, int line_offset) : doc_(doc), line_offset_(line_offset) {}

  void OnDocumentStart(const YAML::Mark& mark) override { start_ = mark; }
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

  NodeData* root() const { return root_; }
  // Where the document's first token is; null before OnDocumentStart.
  const YAML::Mark& start() const { return start_; }

 private:
  NodeData* New(Type type, const YAML::Mark& mark, YAML::anchor_t anchor) {
    base::CourtesyPoint();
    NodeData& n = doc_->nodes_.emplace_back();
    n.type = type;
    n.mark = ToMark(mark);
    if (n.mark.line >= 0) n.mark.line += line_offset_;
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
  int line_offset_;
  NodeData* root_ = nullptr;
  YAML::Mark start_ = YAML::Mark::null_mark();
  std::vector<NodeData*> anchors_;  // by yaml-cpp anchor id (per document, from 1)
  std::vector<std::pair<NodeData*, size_t>> open_;
  std::vector<NodeData*> scratch_;
};

std::optional<std::vector<YamlDocument>> YamlDocument::ParseAll(std::string_view text,
                                                                std::string* error,
                                                                YamlMark* error_mark) {
  return ParseAllAt(text, 0, error, error_mark);
}

std::optional<std::vector<YamlDocument>> YamlDocument::ParseAllAt(std::string_view text,
                                                                  int line_offset,
                                                                  std::string* error,
                                                                  YamlMark* error_mark) {
  std::vector<YamlDocument> docs;
  try {
    ViewBuf buf(text);
    std::istream in(&buf);
    YAML::Parser parser(in);
    int previous_start = -1;
    while (true) {
      YamlDocument doc;
      YamlTreeBuilder builder(&doc, line_offset);
      if (!parser.HandleNextDocument(builder)) break;
      // yaml-cpp 0.7 can stop consuming tokens and then return the same empty document
      // forever (e.g. for ",rang\x92\xa0\x96\xe98["); every real document starts past the
      // previous one's first token.
      if (!builder.start().is_null() && builder.start().pos == previous_start) {
        if (error != nullptr) *error = "the YAML parser stopped making progress";
        if (error_mark != nullptr) {
          *error_mark = ToMark(builder.start());
          if (error_mark->line >= 0) error_mark->line += line_offset;
        }
        return std::nullopt;
      }
      previous_start = builder.start().pos;
      doc.FixKids();
      doc.root_ = builder.root();
      docs.push_back(std::move(doc));
    }
  } catch (const YAML::Exception& e) {
    if (error != nullptr) *error = e.msg;
    if (error_mark != nullptr) {
      *error_mark = e.mark.is_null() ? YamlMark{} : ToMark(e.mark);
      if (error_mark->line >= 0) error_mark->line += line_offset;
    }
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

namespace {

// Below this size one thread parses faster than the split's bookkeeping pays for.
constexpr size_t kMinSplitBytes = 256 * 1024;
constexpr size_t kPieceBytes = 32 * 1024;
// Nice value of the helper threads: below a reload thread's (10), so that under load they
// only use CPU nobody else wants.
constexpr int kHelperNice = 19;

struct Line {
  size_t begin;  // offset of the first byte
  size_t end;    // offset of the '\n' (or the text's end)
};

size_t Indent(std::string_view text, const Line& l) {
  size_t i = l.begin;
  while (i < l.end && text[i] == ' ') ++i;
  return i - l.begin;
}

// Blank or comment-only.
bool IsQuiet(std::string_view text, const Line& l) {
  size_t i = l.begin + Indent(text, l);
  return i >= l.end || text[i] == '#' || text[i] == '\r';
}

// `- ` / `-` at column `indent`: a block sequence item.
bool IsItem(std::string_view text, const Line& l, size_t indent) {
  size_t i = l.begin + indent;
  if (i >= l.end || text[i] != '-') return false;
  return i + 1 >= l.end || text[i + 1] == ' ' || text[i + 1] == '\r';
}

// `key:` at column 0 with nothing after the colon but spaces or a comment: returns the key.
std::optional<std::string_view> BlockKey(std::string_view text, const Line& l) {
  size_t i = l.begin;
  while (i < l.end) {
    char c = text[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok) break;
    ++i;
  }
  if (i == l.begin || i >= l.end || text[i] != ':' || text[l.begin] == '-') return std::nullopt;
  std::string_view key = text.substr(l.begin, i - l.begin);
  for (++i; i < l.end; ++i) {
    if (text[i] == '#') break;
    if (text[i] != ' ' && text[i] != '\r') return std::nullopt;
  }
  return key;
}

// Anything whose meaning could reach across a cut: anchors, aliases and tags (at the start
// of a token), directives and document markers. Conservative: a quoted `a *b` counts too.
bool HasCrossReferences(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c != '&' && c != '*' && c != '!' && c != '%' && c != '.') continue;
    char prev = i == 0 ? '\n' : text[i - 1];
    if (c == '%' || c == '.') {
      if (prev == '\n' && (c == '%' || text.substr(i, 3) == "...")) return true;
      continue;
    }
    if (prev == ' ' || prev == '\n' || prev == '\t' || prev == '[' || prev == '{' || prev == ',') {
      return true;
    }
  }
  for (size_t at = text.find("---"); at != std::string_view::npos; at = text.find("---", at + 3)) {
    if (at == 0 || text[at - 1] == '\n') return true;
  }
  return false;
}

}  // namespace

std::optional<YamlDocument> YamlDocument::ParseSplit(std::string_view text, int threads) {
  if (threads < 2 || text.size() < kMinSplitBytes || HasCrossReferences(text)) {
    return std::nullopt;
  }
  std::vector<Line> lines;
  lines.reserve(text.size() / 16);
  for (size_t begin = 0; begin < text.size();) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back({begin, end});
    begin = end + 1;
  }

  // The largest top-level block sequence: [first_line, end_line) with its item lines.
  struct Region {
    std::string_view key;
    size_t first_line = 0, end_line = 0;
    std::vector<size_t> items;  // line indexes of the items
  };
  Region best;
  size_t best_bytes = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::optional<std::string_view> key = BlockKey(text, lines[i]);
    if (!key) continue;
    size_t j = i + 1;
    while (j < lines.size() && IsQuiet(text, lines[j])) ++j;
    if (j >= lines.size()) break;
    size_t indent = Indent(text, lines[j]);
    if (!IsItem(text, lines[j], indent)) continue;
    Region r;
    r.key = *key;
    r.first_line = j;
    size_t k = j;
    for (; k < lines.size(); ++k) {
      if (IsQuiet(text, lines[k])) continue;
      size_t in = Indent(text, lines[k]);
      if (in > indent) continue;
      if (in < indent || !IsItem(text, lines[k], indent)) break;
      r.items.push_back(k);
    }
    r.end_line = k;
    size_t end = k < lines.size() ? lines[k].begin : text.size();
    if (end - lines[j].begin > best_bytes) {
      best_bytes = end - lines[j].begin;
      best = std::move(r);
    }
    i = k - 1;
  }
  if (best_bytes < kMinSplitBytes / 2) return std::nullopt;

  // Cut the region into pieces of about kPieceBytes, at item lines. Small pieces let the
  // threads share the work whatever their speed (see below).
  size_t region_begin = lines[best.first_line].begin;
  size_t region_end = best.end_line < lines.size() ? lines[best.end_line].begin : text.size();
  std::vector<size_t> cuts{best.first_line};  // first line of each piece
  for (size_t item : best.items) {
    if (lines[item].begin - lines[cuts.back()].begin >= kPieceBytes &&
        region_end - lines[item].begin >= kPieceBytes / 2) {
      cuts.push_back(item);
    }
  }
  if (cuts.size() < 2) return std::nullopt;

  struct Piece {
    std::string_view text;
    int line = 0;
    std::optional<std::vector<YamlDocument>> docs;
  };
  std::vector<Piece> parts(cuts.size());
  for (size_t p = 0; p < cuts.size(); ++p) {
    size_t begin = lines[cuts[p]].begin;
    size_t end = p + 1 < cuts.size() ? lines[cuts[p + 1]].begin : region_end;
    parts[p].text = text.substr(begin, end - begin);
    parts[p].line = static_cast<int>(cuts[p]);
  }
  // The calling thread parses the rest of the document, with the region cut out, and then
  // takes pieces from the queue like the helpers. Helpers run at the lowest priority: a
  // reload must not take CPU from the workers serving traffic, so on a busy machine the
  // caller (a reload runs at nice 10) does nearly all the work itself, as a whole-text parse
  // would, and only otherwise idle CPUs speed it up.
  std::atomic<size_t> next{0};
  auto drain = [&parts, &next] {
    for (size_t p = next.fetch_add(1); p < parts.size(); p = next.fetch_add(1)) {
      parts[p].docs = ParseAllAt(parts[p].text, parts[p].line, nullptr, nullptr);
    }
  };
  std::vector<std::thread> pool;
  size_t helpers = std::min(static_cast<size_t>(threads - 1), parts.size() - 1);
  const int64_t courtesy = base::CourtesyDeadline();
  for (size_t h = 0; h < helpers; ++h) {
    pool.emplace_back([&drain, courtesy] {
      setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), kHelperNice);
      base::SetCourtesyDeadline(courtesy);
      drain();
    });
  }
  std::string skeleton_text;
  skeleton_text.reserve(text.size() - (region_end - region_begin));
  skeleton_text.append(text.substr(0, region_begin));
  skeleton_text.append(text.substr(region_end));
  std::optional<std::vector<YamlDocument>> skeleton =
      ParseAllAt(skeleton_text, 0, nullptr, nullptr);
  drain();
  for (std::thread& t : pool) t.join();

  if (!skeleton || skeleton->size() != 1) return std::nullopt;
  YamlDocument doc = std::move(skeleton->front());
  // Lines after the cut moved up by the region's length.
  int removed = static_cast<int>(best.end_line - best.first_line);
  for (NodeData& n : doc.nodes_) {
    if (n.mark.line >= static_cast<int>(best.first_line)) n.mark.line += removed;
  }
  NodeData* root = doc.root_;
  if (root == nullptr || root->type != Type::kMap) return std::nullopt;
  size_t slot = 0;  // index in doc.kids_ of the region key's (empty) value
  int found = 0;
  for (uint32_t i = 0; i + 1 < root->kid_count; i += 2) {
    NodeData* key = root->kids[i];
    if (key->type == Type::kScalar && key->scalar == best.key) {
      ++found;
      slot = root->kids_begin + i + 1;
    }
  }
  if (found != 1 || doc.kids_[slot]->type != Type::kNull) return std::nullopt;

  NodeData& seq = doc.nodes_.emplace_back();
  seq.type = Type::kSequence;
  seq.kids_begin = static_cast<uint32_t>(doc.kids_.size());
  for (Piece& piece : parts) {
    if (!piece.docs || piece.docs->size() != 1) return std::nullopt;
    YamlDocument& part = piece.docs->front();
    NodeData* list = part.root_;
    if (list == nullptr || list->type != Type::kSequence) return std::nullopt;
    if (&piece == &parts.front()) {
      seq.mark = list->mark;
      seq.tag = list->tag;
    }
    doc.kids_.insert(doc.kids_.end(), list->kids, list->kids + list->kid_count);
    seq.kid_count += list->kid_count;
    doc.parts_.push_back(std::move(part));
  }
  doc.kids_[slot] = &seq;
  doc.FixKids();
  return doc;
}

}  // namespace turnpike::config
