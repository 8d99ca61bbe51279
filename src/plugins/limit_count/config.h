// limit-count: configuration part. APISIX's `limit-count` plugin (priority 1002, access):
// at most `count` requests per `time_window` seconds per key; past it, `rejected_code`.
//
//   limit-count:
//     count: 100                  # or a template: "${http_count ?? 10}"
//     time_window: 60             # seconds, or a template
//     window_type: fixed          # or sliding
//     key_type: var               # var | var_combination | constant
//     key: remote_addr            # a variable name, a template, or a literal
//     rejected_code: 503          # 200..599
//     rejected_msg: "..."         # body {"error_msg": "..."}
//     policy: local               # local | redis | redis-cluster | redis-sentinel
//     allow_degradation: false    # a failing store lets requests through
//     show_limit_quota_header: true
//     group: "g1"                 # one counter for every route with this group
//     rules: [{count, time_window, key, header_prefix}]  # instead of count/time_window
//     redis_host, redis_port, redis_username, redis_password, redis_database,
//     redis_timeout (ms), redis_keepalive_timeout, redis_keepalive_pool
//     redis_sentinels: [{host, port}], redis_master_name, redis_role (master),
//     redis_connect_timeout, redis_read_timeout, sentinel_username, sentinel_password
//     redis_cluster_nodes: ["host:port", ...], redis_cluster_name, redis_password,
//     redis_timeout, redis_cluster_ssl, redis_cluster_ssl_verify, redis_keepalive_timeout,
//     redis_keepalive_pool
//     sync_interval: -1           # seconds, >= 0.1 and < time_window (redis policies):
//                                 # decided locally, added to Redis once per interval
//
// Everything is parsed and compiled here, at load: templates into pieces, the counter
// identity prefix, the header names (from plugin_metadata), the rejection body.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "turnpike/factory_context.h"
#include "turnpike/request_vars.h"
#include "turnpike/status.h"
#include "turnpike/template.h"

namespace turnpike::plugins::limit_count {

enum class KeyType : uint8_t { kVar, kVarCombination, kConstant };
enum class Policy : uint8_t { kLocal, kRedis, kRedisCluster, kRedisSentinel };
enum class WindowType : uint8_t { kFixed, kSliding };

// A count or a time window: a positive integer, or a template resolved per request (which
// must then give a positive integer <= 2^53 - 1, else the request gets 500).
struct Amount {
  uint64_t value = 0;
  std::optional<Template> tpl;
  std::string text;  // without a template: value in decimal (a header value, made once)
};

struct Rule {
  Amount count;
  Amount time_window;  // seconds
  Template key;        // rules mode: a template; skipped when it resolves no variable
  // The quota headers' names: "X-RateLimit-Limit", or with rules "X-<prefix>-RateLimit-Limit"
  // (the prefix: header_prefix, else the rule's 1-based index), metadata names likewise.
  std::string limit_header;
  std::string remaining_header;
  std::string reset_header;
  // Appended to the counter key in rules mode, so two rules never share a counter.
  std::string key_suffix;
};

struct RedisConfig {
  std::string host;
  int port = 6379;
  std::string username;
  std::string password;
  int database = 0;
  int timeout_ms = 1000;  // per call (redis-sentinel: redis_read_timeout)
  int keepalive_timeout_ms = 10000;
  int keepalive_pool = 100;
  // redis-sentinel: the master's address comes from the first sentinel that answers
  // `SENTINEL get-master-addr-by-name`, asked again after the master connection fails (a
  // failover moves it).
  struct Address {
    std::string host;
    int port = 0;
  };
  std::vector<Address> sentinels;
  std::string master_name;
  std::string sentinel_username;
  std::string sentinel_password;
  int connect_timeout_ms = 1000;  // a sentinel's answer
  // redis-cluster: the seeds the slot map is first asked of ("host:port" each), and the
  // cluster's name (APISIX names its slot cache with it; here it only tells clusters apart).
  std::vector<Address> cluster_nodes;
  std::string cluster_name;
};

struct Config {
  std::vector<Rule> rules;  // one rule (from count/time_window/key) unless rules mode
  bool rules_mode = false;
  WindowType window_type = WindowType::kFixed;
  KeyType key_type = KeyType::kVar;
  std::string key = "remote_addr";
  std::optional<VarRef> key_var;  // key_type var: the variable (nullopt: unknown name, nil)
  Template key_template;          // key_type var_combination
  int rejected_code = 503;
  std::optional<std::string> rejected_msg;
  std::string rejected_body;  // {"error_msg":"..."} when rejected_msg is set
  Policy policy = Policy::kLocal;
  bool allow_degradation = false;
  bool show_limit_quota_header = true;
  std::optional<std::string> group;
  std::string group_conf;  // with a group: the conf, which every member must share
  RedisConfig redis;
  // sync_interval in ms (delayed sync, delayed_sync.h); -1: every request asks Redis.
  int64_t sync_interval_ms = -1;
  // The counter identity before the key: "<group>:" with a group, else
  // "<owner resource key>:<crc32 of the conf>:" ("/apisix/routes/1:3861285937:").
  std::string identity_prefix;
};

// The CRC-32 (IEEE) APISIX's conf_version uses.
uint32_t Crc32(std::string_view data);

// APISIX's resource key of a plugin's owner: "/apisix/routes/1", "/apisix/services/s"...
std::string ResourceKey(const PluginOwner& owner);

StatusOr<Config> ParseConfig(const nlohmann::json& conf, FactoryContext& ctx);

}  // namespace turnpike::plugins::limit_count
