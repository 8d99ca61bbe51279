#include "discovery/consul_catalog.h"

#include <algorithm>
#include <set>
#include <utility>

#include "base/courtesy.h"
#include "base/strings.h"
#include "discovery/courteous_json.h"

namespace turnpike::discovery {
namespace {

using nlohmann::json;

// An integer port as Lua's tonumber() would read Consul's value: a number or a numeric
// string; -1 for anything else (or a fraction).
int PortOf(const json& v) {
  if (v.is_number_integer()) {
    int64_t p = v.get<int64_t>();
    return p >= 0 && p <= 65535 ? static_cast<int>(p) : -1;
  }
  if (v.is_string()) {
    std::optional<uint64_t> p = base::ParseUint(v.get<std::string>());
    return p && *p <= 65535 ? static_cast<int>(*p) : -1;
  }
  return -1;
}

// A dump node's weight: an integer >= 0, else -1 (the discovery node schema refuses it).
int WeightOf(const json& v) {
  if (v.is_number_integer()) {
    int64_t w = v.get<int64_t>();
    return w >= 0 && w <= INT32_MAX ? static_cast<int>(w) : -1;
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
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
  json doc = ParseJsonCourteously(body);
  JsonFreeGuard free_doc(doc);
  if (!doc.is_object()) return false;
  for (const auto& [name, tags] : doc.items()) names->push_back(name);
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
  json doc = ParseJsonCourteously(body);
  JsonFreeGuard free_doc(doc);
  if (!doc.is_array()) return false;
  std::set<std::pair<std::string, int>> seen;
  for (const json& entry : doc) {
    base::CourtesyPoint();
    if (!entry.is_object()) continue;
    auto service = entry.find("Service");
    if (service == entry.end() || !service->is_object()) continue;
    DiscoveredNode node;
    auto address = service->find("Address");
    if (address != service->end() && address->is_string()) node.host = address->get<std::string>();
    auto port = service->find("Port");
    node.port = port == service->end() || port->is_null() ? 0 : PortOf(*port);
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
  json entity = ParseJsonCourteously(trimmed);
  if (entity.is_discarded()) return Status::Error("dump file is not JSON");
  if (!entity.is_object() || !entity.contains("services") || !entity.contains("last_update")) {
    return Status::Error("dump file misses \"services\" or \"last_update\"");
  }
  const json& services = entity["services"];
  const json& last_update = entity["last_update"];
  if (!services.is_object()) return Status::Error("dump file: \"services\" is not an object");
  if (!last_update.is_number()) {
    return Status::Error("dump file: \"last_update\" is not a number");
  }
  if (expire != 0 &&
      last_update.get<double>() + static_cast<double>(expire) < static_cast<double>(now)) {
    return Status::Error("dump file had expired");
  }
  ConsulServices out;
  for (const auto& [name, nodes] : services.items()) {
    DiscoveredNodes& list = out[name];
    if (!nodes.is_array()) continue;  // an empty object encodes an empty list
    for (const json& n : nodes) {
      if (!n.is_object()) continue;
      DiscoveredNode node;
      auto host = n.find("host");
      if (host != n.end() && host->is_string()) node.host = host->get<std::string>();
      auto port = n.find("port");
      node.port = port == n.end() || port->is_null() ? 0 : PortOf(*port);
      auto weight = n.find("weight");
      node.weight = weight == n.end() ? -1 : WeightOf(*weight);
      list.push_back(std::move(node));
    }
  }
  return out;
}

}  // namespace turnpike::discovery
