#include "admin/control_view.h"

#include <arpa/inet.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_set>
#include <utility>

namespace turnpike::admin {
namespace {

using Json = nlohmann::ordered_json;  // keeps the file's key order
using Kind = ControlView::Kind;

// Defaults as APISIX's JSON schema validator fills them: a missing property with a default
// gets it; an object property without one is descended into only when present. In these
// trees a leaf is a default and {"$props": {...}} such an object.
Json Props(Json props) { return Json{{"$props", std::move(props)}}; }

void ApplyDefaults(Json* value, const Json& defaults) {
  for (const auto& [key, d] : defaults.items()) {
    if (d.is_object() && d.contains("$props")) {
      auto it = value->find(key);
      if (it != value->end() && it->is_object()) ApplyDefaults(&*it, d["$props"]);
    } else if (!value->contains(key)) {
      (*value)[key] = d;
    }
  }
}

// apisix/schema_def.lua: upstream_schema, with health_checker.
const Json& UpstreamDefaults() {
  static const Json kDefaults = [] {
    Json active = {
        {"type", "http"},
        {"timeout", 1},
        {"concurrency", 10},
        {"http_method", "GET"},
        {"http_path", "/"},
        {"http_req_body", ""},
        {"https_verify_certificate", true},
        {"healthy", Props({{"interval", 1}, {"http_statuses", {200, 302}}, {"successes", 2}})},
        {"unhealthy", Props({{"interval", 1},
                             {"http_statuses", {429, 404, 500, 501, 502, 503, 504, 505}},
                             {"http_failures", 5},
                             {"tcp_failures", 2},
                             {"timeouts", 3}})},
    };
    Json passive = {
        {"type", "http"},
        {"healthy", Props({{"http_statuses",
                            {200, 201, 202, 203, 204, 205, 206, 207, 208, 226, 300, 301, 302, 303,
                             304, 305, 306, 307, 308}},
                           {"successes", 5}})},
        {"unhealthy", Props({{"http_statuses", {429, 500, 503}},
                             {"tcp_failures", 2},
                             {"timeouts", 7},
                             {"http_failures", 5}})},
    };
    return Json{
        {"type", "roundrobin"},
        {"hash_on", "vars"},
        {"scheme", "http"},
        {"pass_host", "pass"},
        {"keepalive_pool", Props({{"size", 320}, {"idle_timeout", 60}, {"requests", 1000}})},
        {"tls", Props({{"verify", false}})},
        {"checks",
         Props({{"active", Props(std::move(active))}, {"passive", Props(std::move(passive))}})},
    };
  }();
  return kDefaults;
}

const Json& RouteDefaults() {
  static const Json kDefaults = {{"priority", 0}, {"status", 1}};
  return kDefaults;
}

bool IsIpLiteral(std::string host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

std::optional<int64_t> PortNumber(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// A map-form node, split as core.utils.parse_addr does: "[v6]:port", "[v6]", "v4:port",
// "host:port", "host", or a bare IPv6 address (no port).
Json NodeOfAddr(const std::string& addr, const Json& weight) {
  std::string host = addr;
  std::optional<int64_t> port;
  if (!addr.empty() && addr.front() == '[') {
    size_t colon = addr.rfind(':');
    if (addr.back() != ']' && colon != std::string::npos && colon > 0 && addr[colon - 1] == ']') {
      host = addr.substr(0, colon);
      port = PortNumber(std::string_view(addr).substr(colon + 1));
    }
  } else {
    size_t colon = addr.find(':');
    size_t dot = addr.find('.');
    bool bare_v6 = colon != std::string::npos && addr.find(':', colon + 1) != std::string::npos &&
                   (dot == std::string::npos || dot > addr.find(':', colon + 1));
    if (colon != std::string::npos && !bare_v6) {
      host = addr.substr(0, colon);
      port = PortNumber(std::string_view(addr).substr(colon + 1));
    }
  }
  Json node = {{"host", host}};
  if (port) node["port"] = *port;
  node["weight"] = weight;
  return node;
}

// apisix/upstream.lua's filter_upstream, after the schema's defaults. `owner_key` and
// `owner_id` name the item holding the upstream (itself when standalone).
void ShapeUpstream(Json* up, std::string_view owner_key, std::string_view owner_id,
                   int64_t modified_index, bool* has_domain) {
  ApplyDefaults(up, UpstreamDefaults());
  (*up)["resource_key"] = owner_key;
  (*up)["resource_version"] = modified_index;
  (*up)["resource_id"] = owner_id;
  auto nodes = up->find("nodes");
  if (nodes == up->end()) return;
  if (nodes->is_object()) {
    Json list = Json::array();
    for (const auto& [addr, weight] : nodes->items()) list.push_back(NodeOfAddr(addr, weight));
    *nodes = std::move(list);
  } else if (nodes->is_array()) {
    for (Json& node : *nodes) {  // the list form's item schema: priority defaults to 0
      if (node.is_object() && !node.contains("priority")) node["priority"] = 0;
    }
  }
  if (!nodes->is_array()) return;
  for (const Json& node : *nodes) {
    auto host = node.is_object() ? node.find("host") : node.end();
    if (host != node.end() && host->is_string() && !IsIpLiteral(host->get<std::string>())) {
      *has_domain = true;
      break;
    }
  }
  if (*has_domain) (*up)["dns_nodes"] = *nodes;
}

void Lowercase(Json* s) {
  if (!s->is_string()) return;
  std::string text = s->get<std::string>();
  for (char& c : text) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  *s = std::move(text);
}

// Routes and services: hosts lowercased (apisix/router.lua, http/service.lua), every plugin
// conf with a `_meta` (plugin.set_plugins_meta_parent; the parent it records is not encoded).
void ShapeOwner(Json* value) {
  for (const char* field : {"host", "hosts"}) {
    auto it = value->find(field);
    if (it == value->end()) continue;
    if (it->is_array()) {
      for (Json& h : *it) Lowercase(&h);
    } else {
      Lowercase(&*it);
    }
  }
  auto plugins = value->find("plugins");
  if (plugins != value->end() && plugins->is_object()) {
    for (auto& [name, conf] : plugins->items()) {
      if (conf.is_object() && !conf.contains("_meta")) conf["_meta"] = Json::object();
    }
  }
}

std::string KeyOf(Kind kind, std::string_view id) {
  return "/" + std::string(ControlView::Name(kind)) + "/" + std::string(id);
}

// `s` with every byte that is not part of a well-formed UTF-8 sequence replaced by U+FFFD.
std::string ValidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xe  ? 3
                 : (c >> 3) == 0x1e ? 4
                                    : 0;
    bool ok = len > 0 && i + len <= s.size() && !(len == 2 && c < 0xc2);
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    }
    if (ok && len == 3) {  // no overlong forms, no surrogates
      auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);
    } else if (ok && len == 4) {
      auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90) && c <= 0xf4;
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out.append("\xEF\xBF\xBD");
      ++i;
    }
  }
  return out;
}

Json ParseObject(std::string_view source) {
  Json value = Json::parse(source, nullptr, /*allow_exceptions=*/false);
  // The YAML may hold bytes that are not UTF-8 (the source keeps them): replace them.
  if (value.is_discarded()) value = Json::parse(ValidUtf8(source), nullptr, false);
  return value.is_object() ? value : Json::object();
}

}  // namespace

std::string_view ControlView::Name(Kind kind) {
  switch (kind) {
    case Kind::kRoutes:
      return "routes";
    case Kind::kServices:
      return "services";
    case Kind::kUpstreams:
      break;
  }
  return "upstreams";
}

std::string RenderControlItem(Kind kind, std::string_view id, std::string_view source,
                              int64_t modified_index) {
  std::string key = KeyOf(kind, id);
  Json value = ParseObject(source);
  value["id"] = id;  // ids are strings once loaded (`id: 1` is "1")
  bool has_domain = false;
  if (kind == Kind::kUpstreams) {
    ShapeUpstream(&value, key, id, modified_index, &has_domain);
  } else {
    if (kind == Kind::kRoutes) ApplyDefaults(&value, RouteDefaults());
    ShapeOwner(&value);
    auto up = value.find("upstream");
    if (up != value.end() && up->is_object()) {
      ShapeUpstream(&*up, key, id, modified_index, &has_domain);
    }
  }
  Json item = {{"key", key}, {"modifiedIndex", modified_index}};
  if (kind == Kind::kRoutes) item["orig_modifiedIndex"] = modified_index;
  item["has_domain"] = has_domain;
  item["value"] = std::move(value);
  return item.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::unique_ptr<ControlView> ControlView::Build(config::RoutesConfig& routes,
                                                const std::vector<std::string>& skipped,
                                                int64_t modified_index) {
  auto view = std::make_unique<ControlView>();
  view->modified_index_ = modified_index;
  std::unordered_set<std::string_view> left_out(skipped.begin(), skipped.end());
  auto take = [&](Kind kind, auto& specs) {
    Items& out = view->items_[Index(kind)];
    out.items.reserve(specs.size());
    std::string key = std::string(Name(kind)) + "/";
    size_t prefix = key.size();
    for (auto& spec : specs) {
      key.resize(prefix);
      key += spec.id;
      if (!left_out.empty() && left_out.count(key) != 0) continue;
      out.items.push_back({spec.id, std::move(spec.source)});
    }
    out.by_id.reserve(out.items.size());
    for (size_t i = 0; i < out.items.size(); ++i) out.by_id.emplace(out.items[i].id, i);
  };
  take(Kind::kRoutes, routes.routes);
  take(Kind::kServices, routes.services);
  take(Kind::kUpstreams, routes.upstreams);
  return view;
}

const ControlView::Entry* ControlView::Find(Kind kind, std::string_view id) const {
  const Items& items = items_[Index(kind)];
  auto it = items.by_id.find(id);
  return it == items.by_id.end() ? nullptr : &items.items[it->second];
}

std::optional<std::string> ControlView::Item(Kind kind, std::string_view id) const {
  const Entry* entry = Find(kind, id);
  if (entry == nullptr) return std::nullopt;
  return RenderControlItem(kind, entry->id, entry->source, modified_index_);
}

const std::string& ControlView::List(Kind kind) {
  Items& items = items_[Index(kind)];
  if (!items.list) {
    std::string out;
    if (items.items.empty()) {
      out = "{}";
    } else {
      out.push_back('[');
      for (const Entry& entry : items.items) {
        if (out.size() > 1) out.push_back(',');
        out += RenderControlItem(kind, entry.id, entry.source, modified_index_);
      }
      out.push_back(']');
    }
    items.list = std::move(out);
  }
  return *items.list;
}

bool ControlView::Has(Kind kind, std::string_view id) const { return Find(kind, id) != nullptr; }

std::optional<ControlView::Checked> ControlView::CheckerOf(Kind kind, const Entry& entry) const {
  // Most items have no checks: their sources are not parsed.
  if (entry.source.find("\"checks\"") == std::string::npos) return std::nullopt;
  Json value = ParseObject(entry.source);
  const Json* checks = nullptr;
  if (kind == Kind::kUpstreams) {
    auto it = value.find("checks");
    if (it != value.end()) checks = &*it;
  } else if (auto up = value.find("upstream"); up != value.end() && up->is_object()) {
    auto it = up->find("checks");
    if (it != up->end()) checks = &*it;
  }
  if (checks == nullptr || !checks->is_object()) return std::nullopt;
  // v1.lua's get_checker_type, after the schema filled `type: http` into active / passive.
  std::string type;
  for (const char* which : {"active", "passive"}) {
    auto part = checks->find(which);
    if (part == checks->end() || !part->is_object()) continue;
    auto t = part->find("type");
    type = t != part->end() && t->is_string() ? t->get<std::string>() : "http";
    break;
  }
  return Checked{KeyOf(kind, entry.id), entry.id, type};
}

std::vector<ControlView::Checked> ControlView::CheckedItems(Kind kind) const {
  std::vector<Checked> out;
  for (const Entry& entry : items_[Index(kind)].items) {
    if (std::optional<Checked> c = CheckerOf(kind, entry)) out.push_back(std::move(*c));
  }
  return out;
}

std::optional<ControlView::Checked> ControlView::Checker(Kind kind, std::string_view id) const {
  const Entry* entry = Find(kind, id);
  if (entry == nullptr) return std::nullopt;
  return CheckerOf(kind, *entry);
}

}  // namespace turnpike::admin
