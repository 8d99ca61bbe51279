// NamedRegistry: the kinds one extension point of this binary offers (plugins, discovery
// providers), each a factory with a name(). Filled explicitly by daemon/ (no
// static-initialiser registration); read-only afterwards, so any thread may read it then.
// Lookups scan: a registry holds tens of kinds and is read at load time, never per request.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace turnpike::base {

template <typename Factory>
class NamedRegistry {
 public:
  // REQUIRES: no factory of the same name() was registered.
  void Register(std::unique_ptr<Factory> factory) { factories_.push_back(std::move(factory)); }

  // nullptr when no factory has that name.
  const Factory* Find(std::string_view name) const {
    for (const auto& f : factories_) {
      if (f->name() == name) return f.get();
    }
    return nullptr;
  }

  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& f : factories_) names.emplace_back(f->name());
    return names;
  }

  // Every factory, in registration order (the daemon starts their services in this order).
  std::vector<const Factory*> Factories() const {
    std::vector<const Factory*> out;
    for (const auto& f : factories_) out.push_back(f.get());
    return out;
  }

 private:
  std::vector<std::unique_ptr<Factory>> factories_;
};

}  // namespace turnpike::base
