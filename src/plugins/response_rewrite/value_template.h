// ValueTemplate: a header value with `$var` / `${var}` / `${var ?? default}` references,
// resolved per request the way APISIX's core.utils.resolve_var does.
//
//   "from $remote_addr to ${server_addr}:$server_port"    "${http_x_tag ?? none}"
//
// A reference is `$` followed by word characters and dots, or by a braced name; a `$` right
// after a backslash is literal (the backslash stays, as in APISIX). A variable that is
// missing gives its default, else "". A name Turnpike does not know (see CompileVar) is
// always missing, as an unknown ctx.var is nil in APISIX.
//
// Compiled on the control thread; Render() on workers.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "turnpike/request_vars.h"

namespace turnpike::plugins::response_rewrite {

class ValueTemplate {
 public:
  static ValueTemplate Compile(std::string_view text);

  // True when the value needs no request variables.
  bool is_literal() const { return vars_ == 0; }
  // The text of a literal template.
  const std::string& literal() const { return text_; }

  // Worker, hot path. Writes the value into `out` (cleared first); no allocation beyond its
  // growth.
  void Render(RequestVars& vars, std::string* out) const;

 private:
  struct Part {
    std::string literal;             // text before the variable (may be empty)
    std::optional<VarRef> var;       // nullopt: an unknown name (always missing)
    bool is_var = false;             // false only for the trailing text
    std::optional<std::string> def;  // `?? default`
  };
  std::string text_;
  std::vector<Part> parts_;
  size_t vars_ = 0;
};

}  // namespace turnpike::plugins::response_rewrite
