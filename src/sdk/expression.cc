// turnpike::Expression over expr::Expr (the engine routes' `vars` use).
#include "turnpike/expression.h"

#include "expr/expr.h"

namespace turnpike {
namespace {

class CompiledExpression final : public Expression {
 public:
  explicit CompiledExpression(expr::ExprConstPtr e) : expr_(std::move(e)) {}
  bool Eval(RequestVars& vars) const override { return expr_->Eval(vars); }
  bool Reads(VarRef::Kind kind) const override { return expr_->Reads(kind); }

 private:
  expr::ExprConstPtr expr_;
};

}  // namespace

StatusOr<ExpressionConstPtr> Expression::Compile(const nlohmann::json& rule) {
  StatusOr<expr::ExprConstPtr> e = expr::Expr::Compile(rule);
  if (!e.ok()) return e.status();
  return ExpressionConstPtr(std::make_unique<CompiledExpression>(std::move(e).value()));
}

}  // namespace turnpike
