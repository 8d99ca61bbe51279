// Expression: a compiled `vars` expression (APISIX's lua-resty-expr DSL), for plugins that
// take conditions in their configuration (file-logger's `match`, response-rewrite's `vars`).
//
//   [["arg_name", "==", "json"], ["http_x_v", "~~", "^v[0-9]+$"]]      list = implicit AND
//   ["OR", ["arg_a", "==", "1"], ["!AND", ["arg_b", ">", 3], [...]]]   leading logical op
//   ["arg_env", "!", "~~", "[Dd]ev"]                                    negated expression
//
// Operators: == ~= > >= < <= ~~ ~* in has ipmatch, with APISIX's rules for numbers, nil and
// regexes (PCRE2 with JIT, compiled here, never per request). The same engine evaluates
// routes' `vars`, so a condition means the same in a route and in a plugin.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>

#include "turnpike/request_vars.h"
#include "turnpike/status.h"

namespace turnpike {

class Expression;
using ExpressionConstPtr = std::unique_ptr<const Expression>;

class Expression {
 public:
  virtual ~Expression() = default;

  // Control thread. `rule` is the expression array. Unknown variables, bad regexes and bad
  // shapes are errors here, worded as APISIX's: "failed to validate the 'vars' expression:
  // invalid operator 'foo'". The caller owns the result.
  static StatusOr<ExpressionConstPtr> Compile(const nlohmann::json& rule);

  // Any thread (one Expression may be evaluated by several workers at once, each with its
  // own vars), hot path. Whether the request satisfies it; `[]` is always true. No
  // allocation (a regex match uses one per-thread block, allocated on its first use).
  virtual bool Eval(RequestVars& vars) const = 0;

  // Whether some clause reads a variable of `kind` (kPostArg: the form body must be read
  // first). Control thread.
  virtual bool Reads(VarRef::Kind kind) const = 0;
};

}  // namespace turnpike
