// What the consul provider reads from Consul's HTTP API and writes to its dump file, as plain
// functions (no I/O): Consul's answers turned into discovery nodes the way APISIX builds them
// (apisix/discovery/consul/client.lua), and the dump file's JSON (APISIX's shape:
// {"services": {name: [{host, port, weight}]}, "last_update": unix seconds, "expire": s}).
//
// Thread rules: none (pure functions). Cost: linear in the body; no exceptions.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discovery/consul_config.h"
#include "turnpike/discovery.h"

namespace turnpike::discovery {

// Service name -> its nodes, ordered by name.
using ConsulServices = std::map<std::string, DiscoveredNodes>;

// X-Consul-Index: a decimal integer > 0 (Consul never sends 0); nullopt otherwise.
std::optional<uint64_t> ParseConsulIndex(std::string_view header);

// GET /v1/catalog/services: {"name": ["tag", ...], ...} -> the names. False when the body is
// not a JSON object.
bool ParseCatalogServices(std::string_view body, std::vector<std::string>* names);

// GET /v1/health/service/<name>?passing=true: [{"Node": {...}, "Service": {"Address", "Port",
// ...}, "Checks": [...]}, ...] -> nodes {host: Service.Address, port: Service.Port (absent or
// 0: 80), weight: `weight`}, one per distinct host:port in answer order, then sorted by `sort`
// (stable). An entry without a "Service" object is skipped. A missing Address gives host ""
// and a port that is not an integer gives -1: both fail the discovery node schema (503), as
// such answers do in APISIX. False when the body is not a JSON array.
bool ParseHealthService(std::string_view body, int weight, ConsulSort sort, DiscoveredNodes* out);

// Sorts `nodes` as APISIX's sort_type says (stable: equal keys keep Consul's order).
void SortConsulNodes(ConsulSort sort, DiscoveredNodes* nodes);

// [{"host", "port", "weight"}, ...], APISIX's node objects.
nlohmann::json ConsulNodesToJson(const DiscoveredNodes& nodes);
nlohmann::json ConsulServicesToJson(const ConsulServices& services);

// The dump file's text for `services` written at unix time `now`.
std::string EncodeConsulDump(const ConsulServices& services, int64_t now, int64_t expire);

// Reads a dump file's text. Returns the services, or an error saying why the file is not
// used: not JSON, "services" or "last_update" missing, or expired (`expire` != 0 and
// last_update + expire < now). A node weight that is not an integer >= 0 is read as -1 and a
// port that is not an integer as -1 (the discovery node schema then refuses the list: 503).
StatusOr<ConsulServices> DecodeConsulDump(std::string_view text, int64_t now, int64_t expire);

}  // namespace turnpike::discovery
