// turnpike::Template: compiled once, rendered per request (generalised from response-rewrite's
// header values, which it still serves unchanged: without Options::captures, `$1` is the
// variable named "1", unknown, so "").
#include "turnpike/template.h"

#include <utility>

namespace turnpike {
namespace {

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// A capture index: digits only, at most 3 of them (groups beyond 999 do not exist).
bool ParseCapture(std::string_view name, size_t* index) {
  if (name.empty() || name.size() > 3) return false;
  size_t v = 0;
  for (char c : name) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<size_t>(c - '0');
  }
  *index = v;
  return true;
}

}  // namespace

Template Template::Compile(std::string_view text, Options options) {
  Template t;
  t.text_ = std::string(text);
  std::string literal;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    bool escaped = i > 0 && text[i - 1] == '\\';
    if (c != '$' || escaped || i + 1 >= text.size()) {
      literal.push_back(c);
      ++i;
      continue;
    }
    std::string_view name;
    size_t end = i + 1;
    if (text[end] == '{') {
      size_t close = text.find('}', end + 1);
      std::string_view inner = close == std::string_view::npos
                                   ? std::string_view()
                                   : Trim(text.substr(end + 1, close - end - 1));
      if (inner.empty()) {  // "${" without a name and a '}': not a reference
        literal.push_back(c);
        ++i;
        continue;
      }
      name = inner;
      end = close + 1;
    } else {
      while (end < text.size() && IsWordChar(text[end])) ++end;
      if (end == i + 1) {  // "$" followed by no name
        literal.push_back(c);
        ++i;
        continue;
      }
      name = text.substr(i + 1, end - i - 1);
    }
    Part p;
    p.literal = std::move(literal);
    literal.clear();
    p.is_ref = true;
    // `name ?? default` (only the first `??` splits, as ngx_re.split's first two fields).
    if (size_t q = name.find("??"); q != std::string_view::npos) {
      std::string_view rest = Trim(name.substr(q + 2));
      if (size_t q2 = rest.find("??"); q2 != std::string_view::npos) {
        rest = Trim(rest.substr(0, q2));
      }
      p.def = std::string(rest);
      name = Trim(name.substr(0, q));
    }
    if (options.captures && ParseCapture(name, &p.capture)) {
      p.is_capture = true;
      t.uses_captures_ = true;
    } else if (StatusOr<VarRef> ref = CompileVar(name); ref.ok()) {
      p.var = std::move(ref).value();
    }
    t.parts_.push_back(std::move(p));
    ++t.refs_;
    i = end;
  }
  if (!literal.empty() || t.parts_.empty()) {
    Part tail;
    tail.literal = std::move(literal);
    t.parts_.push_back(std::move(tail));
  }
  return t;
}

bool Template::Reads(VarRef::Kind kind) const {
  for (const Part& p : parts_) {
    if (p.var && p.var->kind == kind) return true;
  }
  return false;
}

void Template::Render(RequestVars& vars, std::string* out,
                      std::span<const std::optional<std::string_view>> captures) const {
  out->clear();
  for (const Part& p : parts_) {
    out->append(p.literal);
    if (!p.is_ref) continue;
    std::optional<std::string_view> v;
    if (p.is_capture) {
      if (p.capture < captures.size()) v = captures[p.capture];
    } else if (p.var) {
      v = vars.Get(*p.var);
    }
    if (v) {
      out->append(*v);
    } else if (p.def) {
      out->append(*p.def);
    }
  }
}

}  // namespace turnpike
