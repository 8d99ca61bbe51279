// Template: a configured string with request variables, resolved per request the way APISIX's
// core.utils.resolve_var (and resolve_var_with_captures) does, or the way nginx's log_format
// does (the access log).
//
//   "from $remote_addr to ${server_addr}:$server_port"    "${http_x_tag ?? none}"
//   "/v2/$1"                                                (with Options::captures)
//   "$remote_addr [$time_local] \"$request\" $status"      (with Options::nginx_syntax)
//
// APISIX's syntax (the default): a reference is `$` followed by word characters and dots, or
// by a braced name; a `$` right after a backslash is literal (the backslash stays, as in
// APISIX). `name ?? default` gives `default` when the variable is missing. A missing variable
// without a default renders as Options::missing (""), and so does a name Turnpike does not
// know (an unknown ctx.var is nil in APISIX). With Options::captures, a name of digits only
// (`$1`, `${2}`) is a capture of the regex match the caller passes to Render() ("" when that
// group did not take part).
//
// nginx's log_format syntax (Options::nginx_syntax): a name is letters, digits and `_` only
// (`$status.` is `$status` then "."), `${name}` takes no spaces and no default, and a
// backslash does not make a `$` literal. Values are escaped as Options::escape says, and a
// missing one renders as Options::missing ("-" for nginx's default escaping).
//
// Compile() is lenient (what APISIX does with a bad reference: literal text, or nil);
// CompileStrict() makes an unknown variable and a malformed reference errors, as nginx
// refuses such a log_format at startup.
//
// Compiled on the control thread (names are compiled to VarRefs once); afterwards immutable
// and safe to render from any number of threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "turnpike/request_vars.h"
#include "turnpike/status.h"

namespace turnpike {

class Template {
 public:
  // How a value substituted for a reference is escaped (nginx's `log_format escape=`); the
  // template's own text never is.
  enum class Escape : uint8_t {
    kNone,
    kDefault,         // nginx's default: `"`, `\`, bytes below 0x20 and from 0x7f up as `\xHH`
    kJson,            // a JSON string's content: `\"`, `\\`, `\n` `\r` `\t` `\b` `\f`, other bytes
                      // below 0x20 as `\u00HH`; the rest (UTF-8 included) as is
    kQuerySeparator,  // a `?` as `%3F`, the rest as is: a value substituted into a URI path
                      // cannot start its query (proxy-rewrite's `uri`, APISIX's
                      // escape_separator)
  };

  struct Options {
    bool captures = false;      // `$N` / `${N}` are regex captures, not variables
    bool nginx_syntax = false;  // nginx's log_format names and braces (see above)
    // ngx.re.sub's replacement syntax instead (proxy-rewrite's regex_uri replacements): only
    // `$N` and `${N}` (captures) and `$$` (a '$'); no variables, no backslash escapes.
    // CompileStrict() refuses any other `$`, as ngx.re.sub does; Compile() keeps it as text.
    bool re_sub_syntax = false;
    Escape escape = Escape::kNone;
    // What a missing variable without a default renders as (not escaped).
    std::string_view missing = {};
  };

  Template() = default;  // the empty literal
  static Template Compile(std::string_view text) { return Compile(text, Options{}); }
  static Template Compile(std::string_view text, Options options);
  // Control thread. Like Compile(), but an unknown variable name is an error, and with nginx
  // syntax so are a `$` without a name, an unclosed `${` and a braced name with other
  // characters; the message names the reference and its offset in `text`.
  static StatusOr<Template> CompileStrict(std::string_view text, Options options);

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
  // nullopt: the group did not take part). Returns how many references had a value (their
  // own or their `?? default`), as APISIX's resolve_var counts them: limit-count treats a key
  // template that resolved none as missing.
  size_t Render(RequestVars& vars, std::string* out,
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
  // Compiles `text` into `t`; with `strict`, the first problem is returned as an error.
  static Status Build(std::string_view text, Options options, bool strict, Template* t);
  void AppendValue(std::string_view value, std::string* out) const;

  std::string text_;
  std::vector<Part> parts_;
  size_t refs_ = 0;
  bool uses_captures_ = false;
  Escape escape_ = Escape::kNone;
  std::string missing_;
};

}  // namespace turnpike
