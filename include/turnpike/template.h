// Template: a configured string with request variables, resolved per request the way APISIX's
// core.utils.resolve_var (and resolve_var_with_captures) does.
//
//   "from $remote_addr to ${server_addr}:$server_port"    "${http_x_tag ?? none}"
//   "/v2/$1"                                                (with Options::captures)
//
// A reference is `$` followed by word characters and dots, or by a braced name; a `$` right
// after a backslash is literal (the backslash stays, as in APISIX). `name ?? default` gives
// `default` when the variable is missing. A missing variable without a default renders as
// "", and so does a name Turnpike does not know (an unknown ctx.var is nil in APISIX). With
// Options::captures, a name of digits only (`$1`, `${2}`) is a capture of the regex match
// the caller passes to Render() ("" when that group did not take part).
//
// Compiled on the control thread (names are compiled to VarRefs once); afterwards immutable
// and safe to render from any number of threads at once.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "turnpike/request_vars.h"

namespace turnpike {

class Template {
 public:
  struct Options {
    bool captures = false;  // `$N` / `${N}` are regex captures, not variables
  };

  Template() = default;  // the empty literal
  static Template Compile(std::string_view text) { return Compile(text, Options{}); }
  static Template Compile(std::string_view text, Options options);

  // True when rendering needs neither variables nor captures.
  bool is_literal() const { return refs_ == 0; }
  // The text as configured (for a literal template: its value).
  const std::string& literal() const { return text_; }
  // Whether some reference is a capture (only with Options::captures).
  bool uses_captures() const { return uses_captures_; }
  // Whether some reference reads a variable of `kind`.
  bool Reads(VarRef::Kind kind) const;

  // Any thread, hot path. Writes the value into `out` (cleared first); no allocation beyond
  // the growth of `out`. `captures[i]` is group i of the caller's match (0: the whole match;
  // nullopt: the group did not take part).
  void Render(RequestVars& vars, std::string* out,
              std::span<const std::optional<std::string_view>> captures = {}) const;

 private:
  struct Part {
    std::string literal;        // text before the reference (may be empty)
    std::optional<VarRef> var;  // nullopt: an unknown name (always missing) or a capture
    bool is_ref = false;        // false only for the trailing text
    bool is_capture = false;
    size_t capture = 0;              // group index when is_capture
    std::optional<std::string> def;  // `?? default`
  };
  std::string text_;
  std::vector<Part> parts_;
  size_t refs_ = 0;
  bool uses_captures_ = false;
};

}  // namespace turnpike
