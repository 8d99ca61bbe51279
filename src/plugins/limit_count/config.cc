#include "plugins/limit_count/config.h"

#include <array>
#include <charconv>
#include <set>

#include "plugins/common/schema.h"

namespace turnpike::plugins::limit_count {
namespace {

constexpr uint64_t kMaxAmount = (uint64_t{1} << 53) - 1;  // Lua's largest exact integer

// count / time_window: `integer, exclusiveMinimum 0` or a string (a template).
Status ReadAmount(std::string_view field, const nlohmann::json& v, Amount* out) {
  if (v.is_string()) {
    Template t = Template::Compile(v.get_ref<const std::string&>());
    if (t.is_literal()) {
      // A string without variables is still resolved per request in APISIX (tonumber of
      // it); a literal that is not a positive integer would fail every request, so say so now.
      const std::string& text = t.literal();
      uint64_t n = 0;
      bool ok = !text.empty() && text.size() <= 16;
      for (char c : text) ok = ok && c >= '0' && c <= '9';
      if (ok) n = std::stoull(text);
      if (!ok || n == 0 || n > kMaxAmount) {
        return schema::Property(field, "resolved value is not a positive integer: " + text);
      }
      out->value = n;
      out->text = std::to_string(n);
      return Status::Ok();
    }
    out->tpl = std::move(t);
    return Status::Ok();
  }
  if (!schema::IsInteger(v)) {
    return schema::Property(field, "object matches none of the required");
  }
  double d = v.get<double>();
  if (d <= 0) {
    return schema::Property(field, "expected " + v.dump() + " to be greater than 0");
  }
  if (d > static_cast<double>(kMaxAmount)) {
    return schema::Property(
        field, "expected " + v.dump() + " to be at most " + std::to_string(kMaxAmount));
  }
  out->value = static_cast<uint64_t>(d);
  out->text = std::to_string(out->value);
  return Status::Ok();
}

template <typename E, size_t N>
Status ReadEnum(const nlohmann::json& conf, std::string_view field,
                const std::array<std::pair<std::string_view, E>, N>& values, E* out) {
  auto it = conf.find(field);
  if (it == conf.end()) return Status::Ok();
  if (!it->is_string()) return schema::Property(field, schema::WrongType("string", *it));
  const std::string& s = it->get_ref<const std::string&>();
  for (const auto& [name, value] : values) {
    if (s == name) {
      *out = value;
      return Status::Ok();
    }
  }
  return schema::Property(field, "matches none of the enum values");
}

// The quota header `name` ("X-RateLimit-Limit") for rule `prefix` ("1" -> "X-1-RateLimit-
// Limit"): the prefix goes before "RateLimit-", or after "X-" when the name has no such part.
std::string PrefixedHeader(const std::string& name, const std::string& prefix) {
  if (prefix.empty()) return name;
  size_t at = name.find("RateLimit-");
  if (at == std::string::npos) at = name.rfind("X-", 0) == 0 ? 2 : 0;
  return name.substr(0, at) + prefix + "-" + name.substr(at);
}

// redis_timeout and the keepalive fields, shared by the redis and redis-cluster schemas.
Status ReadTimeouts(const nlohmann::json& conf, RedisConfig* r) {
  if (Status s = schema::ReadInt(conf, "redis_timeout", 1, INT32_MAX, &r->timeout_ms); !s.ok())
    return s;
  if (Status s = schema::ReadInt(conf, "redis_keepalive_timeout", 1000, INT32_MAX,
                                 &r->keepalive_timeout_ms);
      !s.ok()) {
    return s;
  }
  return schema::ReadInt(conf, "redis_keepalive_pool", 1, INT32_MAX, &r->keepalive_pool);
}

// The TLS switches are validated as booleans, and TLS itself is refused naming the field.
Status RejectTls(const nlohmann::json& conf, std::string_view ssl_field,
                 std::string_view verify_field) {
  bool ssl = false;
  if (Status s = schema::ReadBool(conf, ssl_field, &ssl); !s.ok()) return s;
  bool verify = false;
  if (Status s = schema::ReadBool(conf, verify_field, &verify); !s.ok()) return s;
  if (ssl) return schema::Property(ssl_field, "TLS to Redis is not supported yet");
  return Status::Ok();
}

Status ReadRedis(const nlohmann::json& conf, RedisConfig* r) {
  auto host = conf.find("redis_host");
  if (host == conf.end())
    return Status::Error("then clause did not match: property \"redis_host\" is required");
  if (Status s = schema::ReadString(conf, "redis_host", 2, &r->host); !s.ok()) return s;
  if (Status s = schema::ReadInt(conf, "redis_port", 1, 65535, &r->port); !s.ok()) return s;
  if (Status s = schema::ReadString(conf, "redis_username", 1, &r->username); !s.ok()) return s;
  if (Status s = schema::ReadString(conf, "redis_password", 0, &r->password); !s.ok()) return s;
  if (Status s = schema::ReadInt(conf, "redis_database", 0, INT32_MAX, &r->database); !s.ok())
    return s;
  if (Status s = ReadTimeouts(conf, r); !s.ok()) return s;
  return RejectTls(conf, "redis_ssl", "redis_ssl_verify");
}

Status ReadSentinel(const nlohmann::json& conf, RedisConfig* r) {
  for (const char* required : {"redis_sentinels", "redis_master_name"}) {
    if (!conf.contains(required)) {
      return Status::Error("then clause did not match: property \"" + std::string(required) +
                           "\" is required");
    }
  }
  const nlohmann::json& list = conf["redis_sentinels"];
  if (!list.is_array())
    return schema::Property("redis_sentinels", schema::WrongType("array", list));
  if (list.empty()) {
    return schema::Property("redis_sentinels", "expect array to have at least 1 items");
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& item = list[i];
    auto fail = [&](std::string_view inner) {
      return schema::Property(
          "redis_sentinels",
          "failed to validate item " + std::to_string(i + 1) + ": " + std::string(inner));
    };
    if (!item.is_object()) return fail(schema::WrongType("object", item));
    RedisConfig::Address a;
    if (!item.contains("host")) return fail("property \"host\" is required");
    if (!item.contains("port")) return fail("property \"port\" is required");
    if (std::string e = schema::CheckString(item["host"], 1); !e.empty()) {
      return fail(schema::PropertyText("host", e));
    }
    if (std::string e = schema::CheckInteger(item["port"], 1, 65535); !e.empty()) {
      return fail(schema::PropertyText("port", e));
    }
    a.host = item["host"].get<std::string>();
    a.port = static_cast<int>(item["port"].get<double>());
    r->sentinels.push_back(std::move(a));
  }
  if (Status s = schema::ReadString(conf, "redis_master_name", 1, &r->master_name); !s.ok())
    return s;
  std::string role = "master";
  if (Status s = schema::ReadString(conf, "redis_role", 1, &role); !s.ok()) return s;
  if (role != "master" && role != "slave") {
    return schema::Property("redis_role", "matches none of the enum values");
  }
  if (role == "slave") {
    // A replica refuses the script's writes; APISIX's connector would pick one anyway.
    return schema::Property("redis_role", "\"slave\" is not supported (counters need writes)");
  }
  r->keepalive_timeout_ms = 60000;
  if (Status s =
          schema::ReadInt(conf, "redis_connect_timeout", 1, INT32_MAX, &r->connect_timeout_ms);
      !s.ok()) {
    return s;
  }
  if (Status s = schema::ReadInt(conf, "redis_read_timeout", 1, INT32_MAX, &r->timeout_ms);
      !s.ok()) {
    return s;
  }
  if (Status s = schema::ReadInt(conf, "redis_keepalive_timeout", 1000, INT32_MAX,
                                 &r->keepalive_timeout_ms);
      !s.ok()) {
    return s;
  }
  if (Status s = schema::ReadInt(conf, "redis_database", 0, INT32_MAX, &r->database); !s.ok())
    return s;
  if (Status s = schema::ReadString(conf, "redis_username", 1, &r->username); !s.ok()) return s;
  if (Status s = schema::ReadString(conf, "redis_password", 0, &r->password); !s.ok()) return s;
  if (Status s = schema::ReadString(conf, "sentinel_username", 1, &r->sentinel_username); !s.ok()) {
    return s;
  }
  if (Status s = schema::ReadString(conf, "sentinel_password", 0, &r->sentinel_password); !s.ok()) {
    return s;
  }
  return Status::Ok();
}

// sync_interval (delayed sync, delayed_sync.h): the redis policies only, and shorter than
// every window known at load (a templated window is not checked).
Status CheckSyncInterval(const Config& c) {
  if (c.sync_interval_ms < 0) return Status::Ok();
  if (c.policy == Policy::kLocal) {
    return schema::Property("sync_interval", "only supported with the redis policies");
  }
  for (const Rule& r : c.rules) {
    if (!r.time_window.tpl &&
        static_cast<uint64_t>(c.sync_interval_ms) >= r.time_window.value * 1000) {
      return schema::Property("sync_interval", "must be less than time_window");
    }
  }
  return Status::Ok();
}

// "host:port" or "[v6 address]:port", as APISIX's parse_addr reads them; the port is required
// here (APISIX would connect to no port and fail every request).
bool ParseHostPort(std::string_view text, RedisConfig::Address* out) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  std::string_view host = text.substr(0, colon);
  std::string_view port = text.substr(colon + 1);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return false;
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return false;  // a bare v6 address: its port cannot be told apart
  }
  int n = 0;
  auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
  if (port.empty() || ec != std::errc() || p != port.data() + port.size() || n < 1 || n > 65535) {
    return false;
  }
  out->host.assign(host);
  out->port = n;
  return true;
}

Status ReadCluster(const nlohmann::json& conf, RedisConfig* r) {
  for (const char* required : {"redis_cluster_nodes", "redis_cluster_name"}) {
    if (!conf.contains(required)) {
      return Status::Error("then clause did not match: property \"" + std::string(required) +
                           "\" is required");
    }
  }
  const nlohmann::json& list = conf["redis_cluster_nodes"];
  if (!list.is_array()) {
    return schema::Property("redis_cluster_nodes", schema::WrongType("array", list));
  }
  if (list.empty()) {
    return schema::Property("redis_cluster_nodes", "expect array to have at least 1 items");
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& item = list[i];
    auto fail = [&](std::string_view inner) {
      return schema::Property(
          "redis_cluster_nodes",
          "failed to validate item " + std::to_string(i + 1) + ": " + std::string(inner));
    };
    if (std::string e = schema::CheckString(item, 2, 100); !e.empty()) return fail(e);
    RedisConfig::Address a;
    const std::string& text = item.get_ref<const std::string&>();
    if (!ParseHostPort(text, &a)) {
      return fail("failed to parse address: " + text + " (expected host:port)");
    }
    r->cluster_nodes.push_back(std::move(a));
  }
  if (!conf["redis_cluster_name"].is_string()) {
    return schema::Property("redis_cluster_name",
                            schema::WrongType("string", conf["redis_cluster_name"]));
  }
  r->cluster_name = conf["redis_cluster_name"].get<std::string>();
  if (Status s = schema::ReadString(conf, "redis_password", 0, &r->password); !s.ok()) return s;
  if (Status s = ReadTimeouts(conf, r); !s.ok()) return s;
  return RejectTls(conf, "redis_cluster_ssl", "redis_cluster_ssl_verify");
}

}  // namespace

uint32_t Crc32(std::string_view data) {
  static constexpr auto kTable = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xffffffffu;
  for (unsigned char b : data) crc = kTable[(crc ^ b) & 0xff] ^ (crc >> 8);
  return crc ^ 0xffffffffu;
}

std::string ResourceKey(const PluginOwner& owner) {
  std::string_view kind;
  switch (owner.kind) {
    case PluginOwnerKind::kRoute:
      kind = "routes";
      break;
    case PluginOwnerKind::kService:
      kind = "services";
      break;
    case PluginOwnerKind::kGlobalRule:
      kind = "global_rules";
      break;
    case PluginOwnerKind::kPluginConfig:
      kind = "plugin_configs";
      break;
    case PluginOwnerKind::kConsumer:
      kind = "consumers";
      break;
  }
  return "/apisix/" + std::string(kind) + "/" + std::string(owner.id);
}

StatusOr<Config> ParseConfig(const nlohmann::json& conf, FactoryContext& ctx) {
  if (!conf.is_object()) return Status::Error(schema::WrongType("object", conf));
  Config c;
  bool has_count = conf.contains("count");
  bool has_window = conf.contains("time_window");
  bool has_rules = conf.contains("rules");
  bool simple = has_count && has_window;
  if (simple && has_rules) {
    return Status::Error("value should match only one schema, but matches both schemas 1 and 2");
  }
  if (!simple && !has_rules) {
    return Status::Error("value should match only one schema, but matches none");
  }
  if (Status s = ReadEnum<WindowType, 2>(
          conf, "window_type", {{{"fixed", WindowType::kFixed}, {"sliding", WindowType::kSliding}}},
          &c.window_type);
      !s.ok()) {
    return s;
  }
  if (Status s = ReadEnum<KeyType, 3>(conf, "key_type",
                                      {{{"var", KeyType::kVar},
                                        {"var_combination", KeyType::kVarCombination},
                                        {"constant", KeyType::kConstant}}},
                                      &c.key_type);
      !s.ok()) {
    return s;
  }
  if (Status s = schema::ReadString(conf, "key", 0, &c.key); !s.ok()) return s;
  if (Status s = schema::ReadInt(conf, "rejected_code", 200, 599, &c.rejected_code); !s.ok())
    return s;
  if (auto it = conf.find("rejected_msg"); it != conf.end()) {
    if (std::string e = schema::CheckString(*it, 1); !e.empty()) {
      return schema::Property("rejected_msg", e);
    }
    c.rejected_msg = it->get<std::string>();
    // A message from YAML may hold invalid UTF-8, on which dump() throws; it gets U+FFFD.
    c.rejected_body = "{\"error_msg\":" +
                      nlohmann::json(*c.rejected_msg)
                          .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                      "}\n";
  }
  if (Status s = ReadEnum<Policy, 4>(conf, "policy",
                                     {{{"local", Policy::kLocal},
                                       {"redis", Policy::kRedis},
                                       {"redis-cluster", Policy::kRedisCluster},
                                       {"redis-sentinel", Policy::kRedisSentinel}}},
                                     &c.policy);
      !s.ok()) {
    return s;
  }
  if (Status s = schema::ReadBool(conf, "allow_degradation", &c.allow_degradation); !s.ok())
    return s;
  if (Status s = schema::ReadBool(conf, "show_limit_quota_header", &c.show_limit_quota_header);
      !s.ok()) {
    return s;
  }
  if (auto it = conf.find("group"); it != conf.end()) {
    if (!it->is_string()) return schema::Property("group", schema::WrongType("string", *it));
    c.group = it->get<std::string>();
    if (has_rules) return Status::Error("group is not supported with rules");
  }
  if (auto it = conf.find("sync_interval"); it != conf.end()) {
    if (!it->is_number())
      return schema::Property("sync_interval", schema::WrongType("number", *it));
    double d = it->get<double>();
    if (d != -1 && d < 0.1) {
      return schema::Property("sync_interval", "expected " + it->dump() + " to be at least 0.1");
    }
    if (d != -1) c.sync_interval_ms = static_cast<int64_t>(d * 1000 + 0.5);
  }
  switch (c.policy) {
    case Policy::kLocal:
      break;
    case Policy::kRedis:
      if (Status s = ReadRedis(conf, &c.redis); !s.ok()) return s;
      break;
    case Policy::kRedisSentinel:
      if (Status s = ReadSentinel(conf, &c.redis); !s.ok()) return s;
      break;
    case Policy::kRedisCluster:
      if (Status s = ReadCluster(conf, &c.redis); !s.ok()) return s;
      break;
  }

  // The quota headers: plugin_metadata may rename them.
  std::string limit_header = "X-RateLimit-Limit";
  std::string remaining_header = "X-RateLimit-Remaining";
  std::string reset_header = "X-RateLimit-Reset";
  const nlohmann::json& meta = ctx.metadata();
  if (meta.is_object()) {
    if (Status s = schema::ReadString(meta, "limit_header", 0, &limit_header); !s.ok()) return s;
    if (Status s = schema::ReadString(meta, "remaining_header", 0, &remaining_header); !s.ok())
      return s;
    if (Status s = schema::ReadString(meta, "reset_header", 0, &reset_header); !s.ok()) return s;
  }

  if (simple) {
    Rule r;
    if (Status s = ReadAmount("count", conf["count"], &r.count); !s.ok()) return s;
    if (Status s = ReadAmount("time_window", conf["time_window"], &r.time_window); !s.ok()) {
      return s;
    }
    r.limit_header = limit_header;
    r.remaining_header = remaining_header;
    r.reset_header = reset_header;
    c.rules.push_back(std::move(r));
  } else {
    c.rules_mode = true;
    const nlohmann::json& rules = conf["rules"];
    if (!rules.is_array()) return schema::Property("rules", schema::WrongType("array", rules));
    std::set<std::string> keys;
    for (size_t i = 0; i < rules.size(); ++i) {
      const nlohmann::json& item = rules[i];
      std::string where = "rules";
      auto fail = [&](std::string_view inner) {
        return schema::Property("rules", "failed to validate item " + std::to_string(i + 1) + ": " +
                                             std::string(inner));
      };
      if (!item.is_object()) return fail(schema::WrongType("object", item));
      for (const char* required : {"count", "time_window", "key"}) {
        if (!item.contains(required)) {
          return fail("property \"" + std::string(required) + "\" is required");
        }
      }
      Rule r;
      if (Status s = ReadAmount("count", item["count"], &r.count); !s.ok()) {
        return fail(s.message());
      }
      if (Status s = ReadAmount("time_window", item["time_window"], &r.time_window); !s.ok()) {
        return fail(s.message());
      }
      if (!item["key"].is_string()) {
        return fail(schema::PropertyText("key", schema::WrongType("string", item["key"])));
      }
      const std::string& key = item["key"].get_ref<const std::string&>();
      if (!keys.insert(key).second) {
        return Status::Error("duplicate key '" + key + "' in rules");
      }
      r.key = Template::Compile(key);
      std::string prefix = std::to_string(i + 1);
      if (auto p = item.find("header_prefix"); p != item.end()) {
        if (!p->is_string()) {
          return fail(schema::PropertyText("header_prefix", schema::WrongType("string", *p)));
        }
        prefix = p->get<std::string>();
        r.key_suffix = ":" + prefix;
      }
      r.limit_header = PrefixedHeader(limit_header, prefix);
      r.remaining_header = PrefixedHeader(remaining_header, prefix);
      r.reset_header = PrefixedHeader(reset_header, prefix);
      c.rules.push_back(std::move(r));
    }
    if (c.rules.empty()) return schema::Property("rules", "expect array to have at least 1 items");
  }

  if (Status s = CheckSyncInterval(c); !s.ok()) return s;

  if (!c.rules_mode) {
    switch (c.key_type) {
      case KeyType::kVar:
        if (StatusOr<VarRef> v = CompileVar(c.key); v.ok()) c.key_var = std::move(v).value();
        break;  // an unknown variable is nil in APISIX: the client address is used
      case KeyType::kVarCombination:
        c.key_template = Template::Compile(c.key);
        break;
      case KeyType::kConstant:
        break;
    }
  }

  // The counter identity: with a group, shared by every route of the group; else owned by
  // the resource and the exact conf (an edit starts new counters, a re-save keeps them).
  if (c.group) {
    c.identity_prefix = *c.group + ":";
    c.group_conf = conf.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    c.identity_prefix =
        ResourceKey(ctx.owner()) + ":" +
        std::to_string(Crc32(conf.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))) +
        ":";
  }
  return c;
}

}  // namespace turnpike::plugins::limit_count
