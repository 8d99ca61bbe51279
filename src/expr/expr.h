// Expr: a compiled `vars` expression (lua-resty-expr v1, reference §2.4), the route predicate
// on request variables that APISIX evaluates after the path, methods and hosts matched.
//
//   [["arg_name", "==", "json"], ["http_x_v", "~~", "^v[0-9]+$"]]      list = implicit AND
//   ["OR", ["arg_a", "==", "1"], ["!AND", ["arg_b", ">", 3], [...]]]   leading logical op
//   ["arg_env", "!", "~~", "[Dd]ev"]                                    negated expression
//   ["arg_k", "v"]                                                      [var, value]: ==
//
// Operators (names case-insensitive): == ~= > >= < <= ~~ ~* in has ipmatch. Variables are
// strings or missing (nil), and the rules are APISIX's:
//   ==, ~=   with a number on the right the variable goes through tonumber() (not a number:
//            == false, ~= true); with JSON null on the right, == is true exactly when the
//            variable is missing; with true/false/array/object on the right == is false and
//            ~= true; otherwise byte comparison (missing: == false, ~= true).
//   > >= < <= tonumber() on both sides; either not a number (or missing) -> false.
//   ~~, ~*   PCRE search (~* caseless); missing -> false.
//   in       the variable equals one of the strings in the right-hand array (numbers in it
//            never equal a string variable, as in Lua); missing -> false.
//   has      the variable is a list containing the right side. No variable Turnpike exposes
//            is a list, so this is false, as for a string variable in APISIX.
//   ipmatch  the variable is an IP inside one of the right side's addresses/CIDRs (a string
//            or an array); missing or unparsable -> false.
// Two-element [var, value] compares with == against the value lowercased (Lua lowercases the
// operator slot before treating it as the value); a numeric value is compared as its string.
//
// Differences from lua-resty-expr, all stricter at load time: unknown variables, regexes that
// do not compile, non-string variable names, expressions of five or more elements and
// nesting deeper than kMaxDepth are rejected instead of failing (or being ignored) per
// request.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <vector>

#include "turnpike/request_vars.h"
#include "turnpike/status.h"

namespace turnpike::expr {

class Expr;
using ExprConstPtr = std::unique_ptr<const Expr>;

class Expr {
 public:
  static constexpr int kMaxDepth = 32;

  // Control thread. `rule` is the `vars` array. Errors read like APISIX's:
  // "failed to validate the 'vars' expression: invalid operator 'foo'".
  static StatusOr<ExprConstPtr> Compile(const nlohmann::json& rule);

  // Worker, hot path. Whether the request's variables satisfy the expression (an empty
  // expression `[]` is always true). Allocation-free (see Regex::Search for the one
  // per-thread block); safe to call on one Expr from several threads, each with its own vars.
  bool Eval(RequestVars& vars) const;

  bool empty() const { return groups_.empty(); }

  // Whether some clause reads a variable of `kind` (kPostArg: the request body must be read
  // before the expression can be evaluated). Control thread, at snapshot build.
  bool Reads(VarRef::Kind kind) const;

  ~Expr();
  Expr(const Expr&) = delete;
  Expr& operator=(const Expr&) = delete;

 private:
  struct Clause;
  struct Compiler;
  // A node: a clause or a group of nodes.
  struct Item {
    bool is_group;
    uint32_t index;  // into groups_ or clauses_
  };
  struct Group {
    bool is_or;      // OR / !OR, else AND / !AND
    bool negate;     // !AND / !OR
    uint32_t begin;  // items_[begin, end)
    uint32_t end;
  };

  Expr();
  bool EvalGroup(uint32_t group, RequestVars& vars) const;
  bool EvalClause(const Clause& clause, RequestVars& vars) const;

  std::vector<Clause> clauses_;
  std::vector<Group> groups_;
  std::vector<Item> items_;
  uint32_t root_ = 0;  // the outermost group
};

}  // namespace turnpike::expr
