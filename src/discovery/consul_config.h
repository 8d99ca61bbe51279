// The config part of the `consul` discovery provider (reference §5.4): `discovery.consul` in
// config.yaml, validated once at start by APISIX's schema (apisix/discovery/consul/schema.lua).
//
//   discovery:
//     consul:
//       servers: ["http://127.0.0.1:8500"]   # required, 1+; http://host:port (port 80 if absent)
//       token: ""                  # ACL token, sent as X-Consul-Token when not empty
//       keepalive: true            # blocking queries; false: poll every fetch_interval
//       fetch_interval: 3          # seconds, >= 1 (keepalive: false only)
//       weight: 1                  # every node's weight, >= 1 (Consul's Weights are ignored)
//       timeout: {connect: 2000, read: 2000, wait: 60}   # ms, ms, s; each >= 1
//       sort_type: origin          # origin | host_sort | port_sort | combine_sort
//       skip_services: [svc]       # never fetched (and "consul" always skipped)
//       default_service: {host: 127.0.0.1, port: 80, metadata: {...}}  # for unknown services
//       dump: {path: /tmp/consul.json, load_on_init: true, expire: 0}  # expire: s, 0 = never
//       shared_size: 64m           # accepted for APISIX compatibility (no shared dict here)
//
// Errors name the field: "servers[0]: only http://address:port is supported, got ...".
// Unknown keys are warned about and ignored (APISIX's schema allows them).
// A server given by name is looked up (c-ares on the control loop: /etc/hosts, then DNS)
// before each round.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "http_client/request.h"
#include "turnpike/discovery.h"
#include "turnpike/status.h"

namespace turnpike::discovery {

enum class ConsulSort { kOrigin, kHostSort, kPortSort, kCombineSort };

struct ConsulServer {
  std::string url;             // as configured: "http://127.0.0.1:8500"
  http_client::Origin origin;  // set when the host is an IP literal
  std::string name;            // else the host name, looked up before every round
  int port = 80;
};

struct ConsulConfig {
  std::vector<ConsulServer> servers;
  std::string token;
  bool keepalive = true;
  int fetch_interval_s = 3;
  int weight = 1;
  int connect_timeout_ms = 2000;
  int read_timeout_ms = 2000;
  int wait_s = 60;
  ConsulSort sort = ConsulSort::kOrigin;
  std::vector<std::string> skip_services;  // as configured ("consul" is added at parse)
  bool has_default_service = false;
  DiscoveredNode default_service;  // its weight is `weight`, as APISIX sets it
  bool has_dump = false;
  std::string dump_path;
  bool dump_load_on_init = true;
  int64_t dump_expire_s = 0;
  // The section as APISIX holds it after its schema check (defaults filled in): dump_data()'s
  // "config".
  nlohmann::json effective;

  // Not config.yaml keys (tests shorten them).
  uint64_t retry_base_ms = 1000;     // back-off after an error: 1, 4, 16, 64, 256 x this
  uint64_t min_rewatch_ms = 1000;    // an unchanged answer sooner than this: wait the rest
  uint64_t dump_interval_ms = 1000;  // the dump file is rewritten at most this often
};

// Validates `discovery.consul`.
StatusOr<ConsulConfig> ParseConsulConfig(const nlohmann::json& conf);

}  // namespace turnpike::discovery
