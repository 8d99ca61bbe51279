#include "expr/expr.h"

#include "expr/expr_internal.h"
#include "expr/lua_number.h"

namespace turnpike::expr {

Expr::Expr() = default;
Expr::~Expr() = default;

bool Expr::Reads(VarRef::Kind kind) const {
  for (const Clause& c : clauses_) {
    if (c.var.kind == kind) return true;
  }
  return false;
}

bool Expr::Eval(RequestVars& vars) const {
  if (groups_.empty()) return true;
  return EvalGroup(root_, vars);
}

bool Expr::EvalGroup(uint32_t index, RequestVars& vars) const {
  const Group& g = groups_[index];
  // AND stops at the first false item, OR at the first true one (as lua-resty-expr does, so
  // variables after that point are not read).
  bool result = !g.is_or;
  for (uint32_t i = g.begin; i < g.end; ++i) {
    const Item& item = items_[i];
    const bool value =
        item.is_group ? EvalGroup(item.index, vars) : EvalClause(clauses_[item.index], vars);
    if (value == g.is_or) {
      result = g.is_or;
      break;
    }
  }
  return result != g.negate;
}

bool Expr::EvalClause(const Clause& c, RequestVars& vars) const {
  const std::optional<std::string_view> value = vars.Get(c.var);
  bool result = false;
  switch (c.op) {
    case Op::kEq:
    case Op::kNe: {
      bool equal = false;
      if (c.right == Right::kNumber) {
        const std::optional<double> n = value ? LuaToNumber(*value) : std::nullopt;
        // Not a number: == is false and ~= is true, which "not equal" gives both.
        equal = n.has_value() && *n == c.number;
      } else if (c.right == Right::kNil) {
        equal = !value.has_value();
      } else if (c.right == Right::kString) {
        equal = value.has_value() && *value == c.text;
      }
      result = c.op == Op::kEq ? equal : !equal;
      break;
    }
    case Op::kGt:
    case Op::kGe:
    case Op::kLt:
    case Op::kLe: {
      if (!value || !c.right_number) break;
      const std::optional<double> n = LuaToNumber(*value);
      if (!n) break;
      const double r = *c.right_number;
      result = c.op == Op::kGt   ? *n > r
               : c.op == Op::kGe ? *n >= r
               : c.op == Op::kLt ? *n < r
                                 : *n <= r;
      break;
    }
    case Op::kRegex:
      result = value.has_value() && c.regex->Search(*value);
      break;
    case Op::kIn:
      if (!value) break;
      for (const std::string& s : c.in) {
        if (*value == s) {
          result = true;
          break;
        }
      }
      break;
    case Op::kHas:
      break;  // variables are never lists (expr.h)
    case Op::kIpMatch:
      result = value.has_value() && c.ip->Match(*value);
      break;
  }
  return result != c.negate;
}

}  // namespace turnpike::expr
