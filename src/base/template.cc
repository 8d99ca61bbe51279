// turnpike::Template: compiled once, rendered per request (generalised from response-rewrite's
// header values, which it still serves unchanged: without Options::captures, `$1` is the
// variable named "1", unknown, so ""). Implemented in base, beside CompileVar, so that config/
// compiles nginx_config.http.access_log_format at load.
#include "turnpike/template.h"

#include <utility>

#include "base/strings.h"

namespace turnpike {
namespace {

bool IsNginxNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool IsWordChar(char c) { return IsNginxNameChar(c) || c == '.'; }

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

constexpr char kHexUpper[] = "0123456789ABCDEF";

// nginx's default log escaping (ngx_http_log_escape): what is not printable ASCII, and the
// two characters that would end or break a quoted field.
bool NeedsLogEscape(unsigned char c) { return c < 0x20 || c >= 0x7f || c == '"' || c == '\\'; }

void AppendLogEscaped(std::string_view v, std::string* out) {
  size_t run = 0;  // start of the bytes not yet appended
  for (size_t i = 0; i < v.size(); ++i) {
    auto c = static_cast<unsigned char>(v[i]);
    if (!NeedsLogEscape(c)) continue;
    out->append(v.data() + run, i - run);
    const char esc[4] = {'\\', 'x', kHexUpper[c >> 4], kHexUpper[c & 0xf]};
    out->append(esc, sizeof(esc));
    run = i + 1;
  }
  out->append(v.data() + run, v.size() - run);
}

std::string At(size_t offset) { return " at offset " + std::to_string(offset); }

}  // namespace

Template Template::Compile(std::string_view text, Options options) {
  Template t;
  Build(text, options, /*strict=*/false, &t);
  return t;
}

StatusOr<Template> Template::CompileStrict(std::string_view text, Options options) {
  Template t;
  if (Status s = Build(text, options, /*strict=*/true, &t); !s.ok()) return s;
  return t;
}

Status Template::Build(std::string_view text, Options options, bool strict, Template* t) {
  t->text_ = std::string(text);
  t->escape_ = options.escape;
  t->missing_ = std::string(options.missing);
  std::string literal;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (options.re_sub_syntax) {
      if (c != '$') {
        literal.push_back(c);
        ++i;
        continue;
      }
      if (i + 1 < text.size() && text[i + 1] == '$') {
        literal.push_back('$');
        i += 2;
        continue;
      }
      const bool braced = i + 1 < text.size() && text[i + 1] == '{';
      const size_t begin = i + 1 + (braced ? 1 : 0);
      size_t end = begin;
      while (end < text.size() && end - begin < 4 && text[end] >= '0' && text[end] <= '9') ++end;
      size_t index = 0;
      const bool ok = ParseCapture(text.substr(begin, end - begin), &index) &&
                      (!braced || (end < text.size() && text[end] == '}'));
      if (!ok) {
        if (strict) return Status::Error("invalid capturing variable name" + At(i));
        literal.push_back(c);
        ++i;
        continue;
      }
      Part p;
      p.literal = std::move(literal);
      literal.clear();
      p.is_ref = true;
      p.is_capture = true;
      p.capture = index;
      t->uses_captures_ = true;
      t->parts_.push_back(std::move(p));
      ++t->refs_;
      i = braced ? end + 1 : end;
      continue;
    }
    bool escaped = !options.nginx_syntax && i > 0 && text[i - 1] == '\\';
    if (c != '$' || escaped) {
      literal.push_back(c);
      ++i;
      continue;
    }
    // `name` and where the reference ends; an empty `problem` when it is well-formed.
    std::string_view name;
    size_t end = i + 1;
    std::string problem;
    if (options.nginx_syntax) {
      if (end < text.size() && text[end] == '{') {
        size_t close = text.find('}', end + 1);
        if (close == std::string_view::npos) {
          problem = "\"" + std::string(text.substr(i)) + "\"" + At(i) + " has no closing \"}\"";
        } else {
          name = text.substr(end + 1, close - end - 1);
          end = close + 1;
          bool valid = !name.empty();
          for (char n : name) valid = valid && IsNginxNameChar(n);
          if (!valid) {
            problem =
                "invalid variable name \"" + std::string(text.substr(i, end - i)) + "\"" + At(i);
          }
        }
      } else {
        while (end < text.size() && IsNginxNameChar(text[end])) ++end;
        name = text.substr(i + 1, end - i - 1);
        if (name.empty()) problem = "\"$\"" + At(i) + " is not followed by a variable name";
      }
    } else if (end < text.size() && text[end] == '{') {
      size_t close = text.find('}', end + 1);
      name = close == std::string_view::npos ? std::string_view()
                                             : Trim(text.substr(end + 1, close - end - 1));
      end = close + 1;
      if (name.empty()) problem = "not a reference";  // "${" without a name and a '}'
    } else {
      while (end < text.size() && IsWordChar(text[end])) ++end;
      name = text.substr(i + 1, end - i - 1);
      if (name.empty()) problem = "not a reference";  // "$" followed by no name
    }
    if (!problem.empty()) {
      // APISIX keeps such a `$` as text; nginx refuses the format.
      if (strict && options.nginx_syntax) return Status::Error(problem);
      literal.push_back(c);
      ++i;
      continue;
    }
    Part p;
    p.literal = std::move(literal);
    literal.clear();
    p.is_ref = true;
    // `name ?? default` (only the first `??` splits, as ngx_re.split's first two fields).
    if (size_t q = name.find("??"); !options.nginx_syntax && q != std::string_view::npos) {
      std::string_view rest = Trim(name.substr(q + 2));
      if (size_t q2 = rest.find("??"); q2 != std::string_view::npos) {
        rest = Trim(rest.substr(0, q2));
      }
      p.def = std::string(rest);
      name = Trim(name.substr(0, q));
    }
    if (options.captures && ParseCapture(name, &p.capture)) {
      p.is_capture = true;
      t->uses_captures_ = true;
    } else if (StatusOr<VarRef> ref = CompileVar(name); ref.ok()) {
      p.var = std::move(ref).value();
    } else if (strict) {
      return Status::Error("unknown variable \"" + std::string(text.substr(i, end - i)) + "\"" +
                           At(i));
    }
    t->parts_.push_back(std::move(p));
    ++t->refs_;
    i = end;
  }
  if (!literal.empty() || t->parts_.empty()) {
    Part tail;
    tail.literal = std::move(literal);
    t->parts_.push_back(std::move(tail));
  }
  return Status::Ok();
}

bool Template::Reads(VarRef::Kind kind) const {
  for (const Part& p : parts_) {
    if (p.var && p.var->kind == kind) return true;
  }
  return false;
}

void Template::AppendValue(std::string_view value, std::string* out) const {
  switch (escape_) {
    case Escape::kNone:
      out->append(value);
      return;
    case Escape::kDefault:
      AppendLogEscaped(value, out);
      return;
    case Escape::kJson:
      base::AppendJsonEscaped(out, value);
      return;
    case Escape::kQuerySeparator:
      for (size_t q; (q = value.find('?')) != std::string_view::npos;) {
        out->append(value.data(), q);
        out->append("%3F");
        value.remove_prefix(q + 1);
      }
      out->append(value);
      return;
  }
}

size_t Template::Render(RequestVars& vars, std::string* out,
                        std::span<const std::optional<std::string_view>> captures) const {
  out->clear();
  size_t resolved = 0;
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
      AppendValue(*v, out);
      ++resolved;
    } else if (p.def) {
      AppendValue(*p.def, out);
      ++resolved;
    } else {
      out->append(missing_);
    }
  }
  return resolved;
}

}  // namespace turnpike
