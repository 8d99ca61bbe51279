// turnpike::IpMatcher over expr::IpMatcher (the matcher of routes' `remote_addrs`).
#include "turnpike/ip_matcher.h"

#include "expr/ip_matcher.h"

namespace turnpike {

struct IpMatcher::Impl {
  expr::IpMatcher matcher;
};

StatusOr<IpMatcher> IpMatcher::Build(const std::vector<std::string>& entries) {
  StatusOr<expr::IpMatcher> m = expr::IpMatcher::Build(entries);
  if (!m.ok()) return m.status();
  IpMatcher out;
  out.impl_ = std::make_shared<const Impl>(Impl{std::move(m).value()});
  return out;
}

bool IpMatcher::Match(std::string_view ip) const {
  return impl_ != nullptr && impl_->matcher.Match(ip);
}

}  // namespace turnpike
