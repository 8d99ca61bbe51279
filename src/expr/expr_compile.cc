// Expr::Compile: lua-resty-expr v1's compile()/compile_expr(), with its error messages where it
// has them.
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "base/strings.h"
#include "expr/expr.h"
#include "expr/expr_internal.h"
#include "expr/lua_number.h"

namespace turnpike::expr {
namespace {

using nlohmann::json;

// `v` as JSON text, for messages. Strings from YAML may hold invalid UTF-8, on which dump()
// throws; those bytes print as U+FFFD.
std::string JsonText(const json& v) {
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

struct LogicOp {
  bool is_or;
  bool negate;
};

// "AND", "OR", "!AND", "!OR" in any case (Lua upper-cases the first element).
std::optional<LogicOp> ParseLogicOp(const json& j) {
  if (!j.is_string()) return std::nullopt;
  const std::string op = j.get<std::string>();
  if (base::EqualsIgnoreCase(op, "AND")) return LogicOp{false, false};
  if (base::EqualsIgnoreCase(op, "OR")) return LogicOp{true, false};
  if (base::EqualsIgnoreCase(op, "!AND")) return LogicOp{false, true};
  if (base::EqualsIgnoreCase(op, "!OR")) return LogicOp{true, true};
  return std::nullopt;
}

std::optional<Op> ParseOp(std::string_view lower) {
  static constexpr std::pair<std::string_view, Op> kOps[] = {
      {"==", Op::kEq},
      {"~=", Op::kNe},
      {">", Op::kGt},
      {">=", Op::kGe},
      {"<", Op::kLt},
      {"<=", Op::kLe},
      {"~~", Op::kRegex},
      {"~*", Op::kRegex},
      {"in", Op::kIn},
      {"has", Op::kHas},
      {"ipmatch", Op::kIpMatch},
  };
  for (const auto& [name, op] : kOps) {
    if (name == lower) return op;
  }
  return std::nullopt;
}

Status Error(std::string message) { return Status::Error(std::move(message)); }

}  // namespace

struct Expr::Compiler {
  Expr& out;

  // compile(): a list of rules (implicit AND), a logical group, or one expression.
  Status Rule(const json& rule, int depth, Item* item) {
    if (depth > kMaxDepth) {
      return Error("rule nested too deep (more than " + std::to_string(kMaxDepth) + " levels)");
    }
    if (rule.is_object()) return Error("rule too short");  // a Lua table without array part
    if (!rule.is_array()) return Error("rule should be wrapped inside brackets");
    if (rule.empty()) return Error("rule too short");
    const json& first = rule[0];
    if (first.is_array() || first.is_object()) return Group(rule, 0, {false, false}, depth, item);
    if (const std::optional<LogicOp> op = ParseLogicOp(first)) {
      if (rule.size() <= 2) return Error("rule too short");
      return Group(rule, 1, *op, depth, item);
    }
    return Expression(rule, item);
  }

  Status Group(const json& rule, size_t first, LogicOp op, int depth, Item* item) {
    std::vector<Item> children;
    children.reserve(rule.size() - first);
    for (size_t i = first; i < rule.size(); ++i) {
      Item child{};
      Status s = Rule(rule[i], depth + 1, &child);
      if (!s.ok()) return s;
      children.push_back(child);
    }
    // Children first, so that a group's items are contiguous.
    const auto begin = static_cast<uint32_t>(out.items_.size());
    out.items_.insert(out.items_.end(), children.begin(), children.end());
    out.groups_.push_back(
        Expr::Group{op.is_or, op.negate, begin, static_cast<uint32_t>(out.items_.size())});
    *item = Item{true, static_cast<uint32_t>(out.groups_.size() - 1)};
    return Status::Ok();
  }

  // compile_expr(): [var, op, value], [var, "!", op, value] or [var, value].
  Status Expression(const json& e, Item* item) {
    Clause c;
    const json* var = &e[0];
    const json* op_json = e.size() > 1 ? &e[1] : nullptr;
    const json* value = e.size() > 2 ? &e[2] : nullptr;
    if (e.size() == 4) {
      if (!e[1].is_string() || e[1].get<std::string>() != "!") {
        return Error("bad 'not' expression");
      }
      c.negate = true;
      op_json = &e[2];
      value = &e[3];
    } else if (e.size() > 4) {
      return Error("invalid expression");
    }

    // Lua lowercases the operator slot (numbers become their string) before anything else.
    std::string op_name;
    if (op_json != nullptr) {
      if (op_json->is_string()) {
        op_name = base::ToLower(op_json->get<std::string>());
      } else if (op_json->is_number()) {
        op_name = LuaNumberToString(op_json->get<double>());
      } else {
        return Error("invalid expression");
      }
    }
    std::optional<Op> op = op_json != nullptr ? ParseOp(op_name) : std::nullopt;
    json compat_value;
    if (value == nullptr && !op) {
      // "for compatibility": [var, value] means ==, with the (lowercased) value.
      if (op_json == nullptr) return Error("invalid expression");
      compat_value = op_name;
      value = &compat_value;
      op = Op::kEq;
    }
    if (!op) return Error("invalid operator '" + op_name + "'");
    if (!var->is_string()) return Error("invalid expression: the variable name must be a string");
    StatusOr<VarRef> ref = CompileVar(var->get<std::string>());
    if (!ref.ok()) return ref.status();
    c.var = std::move(ref).value();
    c.op = *op;

    if (value == nullptr || value->is_null()) {
      c.right = Right::kNil;
    } else if (value->is_string()) {
      c.right = Right::kString;
      c.text = value->get<std::string>();
      c.right_number = LuaToNumber(c.text);
    } else if (value->is_number()) {
      c.right = Right::kNumber;
      c.number = value->get<double>();
      c.right_number = c.number;
    } else {
      c.right = Right::kOther;
    }

    if (c.op == Op::kRegex) {
      Status s = CompileRegex(value, op_name == "~*", &c);
      if (!s.ok()) return s;
    } else if (c.op == Op::kIn && value != nullptr && value->is_array()) {
      for (const json& v : *value) {
        if (v.is_string()) c.in.push_back(v.get<std::string>());
      }
    } else if (c.op == Op::kIpMatch) {
      Status s = CompileIpMatch(value, &c);
      if (!s.ok()) return s;
    }
    out.clauses_.push_back(std::move(c));
    *item = Item{false, static_cast<uint32_t>(out.clauses_.size() - 1)};
    return Status::Ok();
  }

  static Status CompileRegex(const json* value, bool caseless, Clause* c) {
    std::string pattern;
    if (value != nullptr && value->is_string()) {
      pattern = value->get<std::string>();
    } else if (value != nullptr && value->is_number()) {
      pattern = LuaNumberToString(value->get<double>());  // Lua would coerce it too
    } else {
      return Error("invalid regex: expected a string, got " +
                   (value == nullptr ? std::string("nothing") : JsonText(*value)));
    }
    StatusOr<Regex> regex = Regex::Compile(pattern, caseless);
    if (!regex.ok()) return regex.status();
    c->regex.emplace(std::move(regex).value());
    return Status::Ok();
  }

  static Status CompileIpMatch(const json* value, Clause* c) {
    // lua-resty-expr: nil, "" and {} are "invalid ip address"; a string is a one-entry list.
    if (value == nullptr || value->is_null() || value->is_object() ||
        (value->is_string() && value->get<std::string>().empty()) ||
        (value->is_array() && value->empty())) {
      return Error("invalid ip address");
    }
    std::vector<std::string> entries;
    if (value->is_string()) {
      entries.push_back(value->get<std::string>());
    } else if (value->is_array()) {
      for (const json& v : *value) {
        if (!v.is_string()) return Error("invalid IP or CIDR '" + JsonText(v) + "'");
        entries.push_back(v.get<std::string>());
      }
    } else {
      return Error("invalid IP or CIDR '" + JsonText(*value) + "'");
    }
    StatusOr<IpMatcher> ip = IpMatcher::Build(entries);
    if (!ip.ok()) return ip.status();
    c->ip.emplace(std::move(ip).value());
    return Status::Ok();
  }
};

StatusOr<ExprConstPtr> Expr::Compile(const nlohmann::json& rule) {
  static constexpr std::string_view kPrefix = "failed to validate the 'vars' expression: ";
  auto fail = [](const std::string& message) {
    return Status::Error(std::string(kPrefix) + message);
  };
  if (!rule.is_array()) return fail("rule should be an array, got " + JsonText(rule));
  std::unique_ptr<Expr> expr(new Expr());
  if (rule.empty()) return ExprConstPtr(std::move(expr));
  // _M.new(): a bare expression at the top ("[var, op, value]" without the outer list) is
  // refused; only a list or a leading logical operator may start the rule.
  const json& first = rule[0];
  if (!first.is_array() && !first.is_object() && !ParseLogicOp(first)) {
    return fail("rule should be wrapped inside brackets");
  }
  Compiler compiler{*expr};
  Item root{};
  Status s = compiler.Rule(rule, 1, &root);
  if (!s.ok()) return fail(s.message());
  expr->root_ = root.index;
  return ExprConstPtr(std::move(expr));
}

}  // namespace turnpike::expr
