#include "discovery/consul_catalog.h"

#include <algorithm>
#include <set>
#include <utility>

#include "base/courtesy.h"
#include "base/strings.h"
#include "discovery/json_answer.h"

namespace turnpike::discovery {
namespace {

using nlohmann::json;
using simdjson::dom::element;

// An integer port as Lua's tonumber() would read Consul's value: a number or a numeric
// string; -1 for anything else (or a fraction).
int PortOf(element v) {
  if (int64_t p = 0; v.get_int64().get(p) == simdjson::SUCCESS) {
    return p >= 0 && p <= 65535 ? static_cast<int>(p) : -1;
  }
  if (std::string_view text; v.get_string().get(text) == simdjson::SUCCESS) {
    std::optional<uint64_t> p = base::ParseUint(text);
    return p && *p <= 65535 ? static_cast<int>(*p) : -1;
  }
  return -1;
}

// A dump node's weight: an integer >= 0, else -1 (the discovery node schema refuses it).
int WeightOf(element v) {
  if (int64_t w = 0; v.get_int64().get(w) == simdjson::SUCCESS) {
    return w >= 0 && w <= INT32_MAX ? static_cast<int>(w) : -1;
  }
  if (double d = 0; v.get_double().get(d) == simdjson::SUCCESS) {
    if (d >= 0 && d <= INT32_MAX && static_cast<double>(static_cast<int>(d)) == d) {
      return static_cast<int>(d);
    }
  }
  return -1;
}

}  // namespace

std::optional<uint64_t> ParseConsulIndex(std::string_view header) {
  std::optional<uint64_t> v = base::ParseUint(base::TrimWhitespace(header));
  if (!v || *v == 0) return std::nullopt;
  return v;
}

bool ParseCatalogServices(std::string_view body, std::vector<std::string>* names) {
  names->clear();
  element doc;
  simdjson::dom::object services;
  if (!ParseAnswer(body, &doc) || doc.get_object().get(services) != simdjson::SUCCESS) {
    return false;
  }
  for (simdjson::dom::key_value_pair kv : services) names->emplace_back(kv.key);
  // By name, each once (a key sent twice names one service).
  std::sort(names->begin(), names->end());
  names->erase(std::unique(names->begin(), names->end()), names->end());
  return true;
}

void SortConsulNodes(ConsulSort sort, DiscoveredNodes* nodes) {
  auto by = [nodes](auto less) { std::stable_sort(nodes->begin(), nodes->end(), less); };
  switch (sort) {
    case ConsulSort::kOrigin:
      break;
    case ConsulSort::kHostSort:
      by([](const DiscoveredNode& a, const DiscoveredNode& b) { return a.host < b.host; });
      break;
    case ConsulSort::kPortSort:
      by([](const DiscoveredNode& a, const DiscoveredNode& b) { return a.port < b.port; });
      break;
    case ConsulSort::kCombineSort:
      by([](const DiscoveredNode& a, const DiscoveredNode& b) {
        return a.host != b.host ? a.host < b.host : a.port < b.port;
      });
      break;
  }
}

bool ParseHealthService(std::string_view body, int weight, ConsulSort sort, DiscoveredNodes* out) {
  out->clear();
  element doc;
  simdjson::dom::array entries;
  if (!ParseAnswer(body, &doc) || doc.get_array().get(entries) != simdjson::SUCCESS) return false;
  std::set<std::pair<std::string, int>> seen;
  for (element entry : entries) {
    base::CourtesyPoint();
    element service;
    if (entry["Service"].get(service) != simdjson::SUCCESS || !service.is_object()) continue;
    DiscoveredNode node;
    node.host = JsonStringMember(service, "Address");
    element port;
    node.port = JsonMember(service, "Port", &port) ? PortOf(port) : 0;
    if (node.port == 0) node.port = 80;
    node.weight = weight;
    if (!seen.emplace(node.host, node.port).second) continue;
    out->push_back(std::move(node));
  }
  SortConsulNodes(sort, out);
  return true;
}

json ConsulNodesToJson(const DiscoveredNodes& nodes) {
  json array = json::array();
  for (const DiscoveredNode& n : nodes) {
    array.push_back({{"host", n.host}, {"port", n.port}, {"weight", n.weight}});
  }
  return array;
}

json ConsulServicesToJson(const ConsulServices& services) {
  json object = json::object();
  for (const auto& [name, nodes] : services) object[name] = ConsulNodesToJson(nodes);
  return object;
}

std::string EncodeConsulDump(const ConsulServices& services, int64_t now, int64_t expire) {
  json entity = {
      {"services", ConsulServicesToJson(services)}, {"last_update", now}, {"expire", expire}};
  return entity.dump(-1, ' ', false, json::error_handler_t::replace);
}

StatusOr<ConsulServices> DecodeConsulDump(std::string_view text, int64_t now, int64_t expire) {
  std::string_view trimmed = base::TrimWhitespace(text);
  if (trimmed.empty()) return Status::Error("dump file is empty");
  element entity;
  if (!ParseAnswer(trimmed, &entity)) return Status::Error("dump file is not JSON");
  element services_value;
  element last_update;
  if (!entity.is_object() || entity["services"].get(services_value) != simdjson::SUCCESS ||
      entity["last_update"].get(last_update) != simdjson::SUCCESS) {
    return Status::Error("dump file misses \"services\" or \"last_update\"");
  }
  simdjson::dom::object services;
  if (services_value.get_object().get(services) != simdjson::SUCCESS) {
    return Status::Error("dump file: \"services\" is not an object");
  }
  double updated = 0;
  if (last_update.get_double().get(updated) != simdjson::SUCCESS) {
    return Status::Error("dump file: \"last_update\" is not a number");
  }
  if (expire != 0 && updated + static_cast<double>(expire) < static_cast<double>(now)) {
    return Status::Error("dump file had expired");
  }
  ConsulServices out;
  for (simdjson::dom::key_value_pair kv : services) {
    DiscoveredNodes& list = out[std::string(kv.key)];
    list.clear();  // a name written twice: the last one counts
    simdjson::dom::array nodes;
    if (kv.value.get_array().get(nodes) != simdjson::SUCCESS) continue;  // {}: an empty list
    for (element n : nodes) {
      if (!n.is_object()) continue;
      DiscoveredNode node;
      node.host = JsonStringMember(n, "host");
      element port;
      node.port = JsonMember(n, "port", &port) ? PortOf(port) : 0;
      element weight;
      node.weight = n["weight"].get(weight) == simdjson::SUCCESS ? WeightOf(weight) : -1;
      list.push_back(std::move(node));
    }
  }
  return out;
}

}  // namespace turnpike::discovery
