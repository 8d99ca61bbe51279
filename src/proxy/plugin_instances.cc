#include "proxy/plugin_instances.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace turnpike::proxy {
namespace {

void AppendSized(std::string* out, std::string_view s) {
  out->append(std::to_string(s.size()));
  out->push_back(':');
  out->append(s);
}

}  // namespace

void PluginInstances::AppendEncoded(std::string* out, const nlohmann::json& v) {
  using Type = nlohmann::json::value_t;
  switch (v.type()) {
    case Type::null:
      out->push_back('n');
      return;
    case Type::boolean:
      out->push_back(v.get<bool>() ? 't' : 'f');
      return;
    // Signed and unsigned alike (the parser makes 7 unsigned, a literal 7 is signed), floats
    // apart: a schema may accept 7 and reject 7.0.
    case Type::number_integer:
      out->push_back('i');
      out->append(std::to_string(v.get<int64_t>()));
      out->push_back(';');
      return;
    case Type::number_unsigned:
      out->push_back('i');
      out->append(std::to_string(v.get<uint64_t>()));
      out->push_back(';');
      return;
    case Type::number_float: {
      // The bits: exact, and no formatting to get wrong (NaN, -0).
      double d = v.get<double>();
      uint64_t bits = 0;
      std::memcpy(&bits, &d, sizeof(bits));
      out->push_back('d');
      out->append(std::to_string(bits));
      out->push_back(';');
      return;
    }
    case Type::string:
      out->push_back('s');
      AppendSized(out, v.get_ref<const std::string&>());
      return;
    case Type::array:
      out->push_back('[');
      for (const nlohmann::json& item : v) AppendEncoded(out, item);
      out->push_back(']');
      return;
    case Type::object:
      out->push_back('{');
      for (auto it = v.begin(); it != v.end(); ++it) {
        AppendSized(out, it.key());
        AppendEncoded(out, it.value());
      }
      out->push_back('}');
      return;
    case Type::binary: {
      const nlohmann::json::binary_t& b = v.get_binary();
      out->push_back('b');
      AppendSized(out, std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
      return;
    }
    case Type::discarded:
      out->push_back('x');
      return;
  }
}

void PluginInstances::AppendIdentity(std::string* out, PluginOwner owner, std::string_view plugin,
                                     const nlohmann::json& conf) {
  out->push_back(static_cast<char>('0' + static_cast<int>(owner.kind)));
  AppendSized(out, owner.id);
  AppendSized(out, plugin);
  AppendEncoded(out, conf);
}

uint64_t PluginInstances::Hash(std::string_view identity) {
  return std::hash<std::string_view>{}(identity);
}

void PluginInstances::ReserveLike(const PluginInstances& like) {
  keys_.reserve(like.keys_.size());
  items_.reserve(like.items_.size());
}

void PluginInstances::Add(std::string_view identity, uint64_t hash, PluginConstSharedPtr plugin) {
  items_.push_back({hash, keys_.size(), identity.size(), std::move(plugin)});
  keys_.append(identity);
}

void PluginInstances::Truncate(size_t n) {
  if (n >= items_.size()) return;
  keys_.resize(items_[n].offset);  // not sealed yet: items_ are in the order of keys_
  items_.resize(n);
}

void PluginInstances::SetSettings(std::string_view plugin, std::string encoding) {
  for (auto& [name, value] : settings_) {
    if (name == plugin) {
      value = std::move(encoding);
      return;
    }
  }
  settings_.emplace_back(std::string(plugin), std::move(encoding));
}

void PluginInstances::Seal() {
  // Stable: should two entries share an identity (ids are unique, so only in hand-made
  // specs), Find() returns the first one added.
  std::stable_sort(items_.begin(), items_.end(),
                   [](const Item& a, const Item& b) { return a.hash < b.hash; });
  // Kept for the snapshot's life: give back what the growth reserved.
  keys_.shrink_to_fit();
  items_.shrink_to_fit();
}

const PluginConstSharedPtr* PluginInstances::Find(std::string_view identity, uint64_t hash) const {
  auto it = std::lower_bound(items_.begin(), items_.end(), hash,
                             [](const Item& item, uint64_t h) { return item.hash < h; });
  for (; it != items_.end() && it->hash == hash; ++it) {
    if (std::string_view(keys_).substr(it->offset, it->size) == identity) return &it->plugin;
  }
  return nullptr;
}

const std::string* PluginInstances::Settings(std::string_view plugin) const {
  for (const auto& [name, value] : settings_) {
    if (name == plugin) return &value;
  }
  return nullptr;
}

size_t PluginInstances::memory_bytes() const {
  size_t bytes = keys_.capacity() + items_.capacity() * sizeof(Item);
  for (const auto& [name, value] : settings_) bytes += name.capacity() + value.capacity();
  return bytes;
}

}  // namespace turnpike::proxy
