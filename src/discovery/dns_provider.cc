#include "discovery/dns_provider.h"

#include <ares.h>
#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <limits>

#include "base/strings.h"
#include "discovery/node_source.h"

namespace turnpike::discovery {
namespace {

constexpr uint64_t kTickMs = 200;

int RecordType(DnsType type) {
  switch (type) {
    case DnsType::kSrv:
      return ns_t_srv;
    case DnsType::kAaaa:
      return ns_t_aaaa;
    case DnsType::kCname:
      return ns_t_cname;
    case DnsType::kA:
    case DnsType::kLast:
      break;
  }
  return ns_t_a;
}

const char* TypeName(DnsType type) {
  switch (type) {
    case DnsType::kLast:
      return "last";
    case DnsType::kSrv:
      return "SRV";
    case DnsType::kA:
      return "A";
    case DnsType::kAaaa:
      return "AAAA";
    case DnsType::kCname:
      return "CNAME";
  }
  return "?";
}

uint16_t Read16(const unsigned char* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }

uint32_t Read32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// The name at `at` (compression allowed); its encoded length in *len. False when malformed.
bool ExpandName(const unsigned char* at, const std::vector<unsigned char>& msg, std::string* name,
                long* len) {
  char* s = nullptr;
  if (ares_expand_name(at, msg.data(), static_cast<int>(msg.size()), &s, len) != ARES_SUCCESS) {
    return false;
  }
  if (name != nullptr) *name = s;
  ares_free_string(s);
  return true;
}

bool IsIp(const std::string& host) {
  upstream::Node probe;
  return ParseIpLiteral(host, 0, &probe);
}

// "ip", "ip:port" or "[ipv6]:port".
bool ValidServer(const std::string& server) {
  std::string host = server;
  std::string port;
  if (!server.empty() && server.front() == '[') {
    size_t close = server.find(']');
    if (close == std::string::npos) return false;
    host = server.substr(1, close - 1);
    std::string rest = server.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return false;
      port = rest.substr(1);
      if (port.empty()) return false;
    }
    if (host.find(':') == std::string::npos) return false;  // brackets are for IPv6
  } else if (size_t colon = server.find(':');
             colon != std::string::npos && server.find(':', colon + 1) == std::string::npos) {
    host = server.substr(0, colon);
    port = server.substr(colon + 1);
    if (port.empty()) return false;
  }
  if (!IsIp(host)) return false;
  if (!port.empty()) {
    std::optional<uint64_t> p = base::ParseUint(port);
    if (!p || *p < 1 || *p > 65535) return false;
  }
  return true;
}

}  // namespace

bool ParseDnsAnswer(const std::vector<unsigned char>& msg, int type, std::vector<DnsRecord>* out) {
  out->clear();
  size_t len = msg.size();
  if (len < 12) return false;
  const unsigned char* buf = msg.data();
  unsigned questions = Read16(buf + 4);
  unsigned answers = Read16(buf + 6);
  size_t off = 12;
  for (unsigned i = 0; i < questions; ++i) {
    long n = 0;
    if (off >= len || !ExpandName(buf + off, msg, nullptr, &n)) return false;
    off += static_cast<size_t>(n) + 4;
    if (off > len) return false;
  }
  for (unsigned i = 0; i < answers; ++i) {
    long n = 0;
    if (off >= len || !ExpandName(buf + off, msg, nullptr, &n)) return false;
    off += static_cast<size_t>(n);
    if (off + 10 > len) return false;
    int rtype = Read16(buf + off);
    uint32_t ttl = Read32(buf + off + 4);
    size_t rdlen = Read16(buf + off + 8);
    off += 10;
    if (off + rdlen > len) return false;
    const unsigned char* rd = buf + off;
    off += rdlen;
    if (rtype != type) continue;
    DnsRecord r;
    r.type = rtype;
    // RFC 2181 §8: a TTL with the top bit set counts as 0.
    r.ttl = (ttl & 0x80000000u) != 0 ? 0 : ttl;
    char text[INET6_ADDRSTRLEN] = {};
    if (rtype == ns_t_a) {
      if (rdlen != 4 || inet_ntop(AF_INET, rd, text, sizeof(text)) == nullptr) return false;
      r.address = text;
    } else if (rtype == ns_t_aaaa) {
      if (rdlen != 16 || inet_ntop(AF_INET6, rd, text, sizeof(text)) == nullptr) return false;
      r.address = text;
    } else if (rtype == ns_t_srv) {
      if (rdlen < 7) return false;
      r.priority = Read16(rd);
      r.weight = Read16(rd + 2);
      r.port = Read16(rd + 4);
      long tn = 0;
      if (!ExpandName(rd + 6, msg, &r.target, &tn)) return false;
    } else if (rtype == ns_t_cname) {
      long tn = 0;
      if (!ExpandName(rd, msg, &r.target, &tn)) return false;
    } else {
      continue;
    }
    out->push_back(std::move(r));
  }
  return true;
}

StatusOr<DnsProviderConfig> ParseDnsProviderConfig(const nlohmann::json& conf) {
  DnsProviderConfig c;
  if (!conf.is_object()) return Status::Error("must be an object");
  bool has_servers = false;
  bool has_resolv = false;
  for (const auto& [key, v] : conf.items()) {
    if (key == "servers") {
      has_servers = true;
      if (!v.is_array() || v.empty()) return Status::Error("servers: must be a non-empty list");
      for (size_t i = 0; i < v.size(); ++i) {
        std::string at = "servers[" + std::to_string(i) + "]";
        if (!v[i].is_string()) return Status::Error(at + ": must be a string");
        std::string s = v[i].get<std::string>();
        if (!ValidServer(s)) {
          return Status::Error(at + ": \"" + s + "\" is not ip, ip:port or [ipv6]:port");
        }
        c.servers.push_back(s);
      }
    } else if (key == "resolv_conf") {
      has_resolv = true;
      if (!v.is_string() || v.get<std::string>().empty()) {
        return Status::Error("resolv_conf: must be a non-empty string");
      }
      c.resolv_conf = v.get<std::string>();
      if (access(c.resolv_conf.c_str(), R_OK) != 0) {
        return Status::Error("resolv_conf: cannot read \"" + c.resolv_conf + "\"");
      }
    } else if (key == "order") {
      if (!v.is_array() || v.empty() || v.size() > 5) {
        return Status::Error("order: must be a list of 1 to 5 entries");
      }
      c.order.clear();
      for (size_t i = 0; i < v.size(); ++i) {
        std::string at = "order[" + std::to_string(i) + "]";
        std::string s = v[i].is_string() ? v[i].get<std::string>() : "";
        DnsType t{};
        if (s == "last") {
          t = DnsType::kLast;
        } else if (s == "SRV") {
          t = DnsType::kSrv;
        } else if (s == "A") {
          t = DnsType::kA;
        } else if (s == "AAAA") {
          t = DnsType::kAaaa;
        } else if (s == "CNAME") {
          t = DnsType::kCname;
        } else {
          return Status::Error(at + ": must be one of last, SRV, A, AAAA, CNAME");
        }
        if (std::find(c.order.begin(), c.order.end(), t) != c.order.end()) {
          return Status::Error(at + ": \"" + s + "\" is listed twice");
        }
        c.order.push_back(t);
      }
    } else if (key == "enable_resolv_search_opt") {
      // Accepted for APISIX compatibility: lookups are sent as given (no search list).
      if (!v.is_boolean()) return Status::Error("enable_resolv_search_opt: must be a boolean");
    } else {
      spdlog::warn("discovery.dns.{}: unknown key, ignored", key);
    }
  }
  if (has_servers == has_resolv) {
    return Status::Error("exactly one of \"servers\" and \"resolv_conf\" is required");
  }
  return c;
}

struct DnsProvider::Service {
  ServiceRef ref;
  std::string name;  // what is looked up
  int port = 0;      // from `name:port`; 0: none
  bool valid = true;
  bool has_last = false;
  DnsType last = DnsType::kA;
  bool answered = false;  // a first round finished (well or not)
  bool failing = false;   // the last round failed (logged once per streak)
  uint64_t next_ms = 0;   // loop time of the next round
  // The round in flight (busy).
  bool busy = false;
  uint64_t round = 0;
  size_t order_pos = 0;
  unsigned tried = 0;  // bit per DnsType
  DnsType current = DnsType::kA;
  uint32_t ttl = 0;
  std::vector<uint64_t> queries;   // sent this round (answered ones too: Cancel ignores them)
  std::vector<DnsRecord> records;  // SRV or CNAME
  std::vector<std::vector<std::string>> addrs;  // per record: its target's addresses
  size_t targets_left = 0;
  // What was last published, and from which record type (Dump()).
  DiscoveredNodesConstSharedPtr nodes;
  DnsType nodes_type = DnsType::kA;
  bool nodes_found = false;  // some type had records
};

DnsProvider::DnsProvider(DnsProviderConfig config) : config_(std::move(config)) {}

DnsProvider::~DnsProvider() = default;

Status DnsProvider::Start(const DiscoveryEnvironment& env) {
  sink_ = env.sink;
  loop_ = env.loop;
  AresResolver::Options options;
  options.timeout_ms = config_.timeout_ms;
  options.tries = config_.tries;
  options.servers = config_.servers;
  options.resolv_conf = config_.resolv_conf;
  resolver_ = std::make_unique<AresResolver>(loop_, options);
  if (Status s = resolver_->Start(); !s.ok()) {
    resolver_->Stop();
    return s;
  }
  uv_timer_init(loop_, &tick_);
  tick_.data = this;
  uv_timer_start(
      &tick_, [](uv_timer_t* t) { static_cast<DnsProvider*>(t->data)->Tick(); }, kTickMs, kTickMs);
  started_ = true;
  return Status::Ok();
}

void DnsProvider::Stop() {
  if (stopped_) return;
  stopped_ = true;
  services_.clear();
  if (resolver_) resolver_->Stop();
  if (started_) uv_close(reinterpret_cast<uv_handle_t*>(&tick_), nullptr);
}

void DnsProvider::Watch(const ServiceRef& ref) {
  if (stopped_ || services_.count(ref) != 0) return;
  auto s = std::make_unique<Service>();
  s->ref = ref;
  // `name` or `name:port` (reference §5.2).
  const std::string& sn = ref.service_name;
  size_t colon = sn.rfind(':');
  if (colon != std::string::npos && sn.find(':') == colon) {
    s->name = sn.substr(0, colon);
    std::optional<uint64_t> port = base::ParseUint(std::string_view(sn).substr(colon + 1));
    if (!port || *port < 1 || *port > 65535) s->valid = false;
    s->port = port ? static_cast<int>(*port) : 0;
  } else {
    s->name = sn;
    s->valid = sn.find(':') == std::string::npos;
  }
  if (s->name.empty()) s->valid = false;
  Service* service = s.get();
  services_.emplace(ref, std::move(s));
  if (!service->valid) {
    spdlog::error("discovery dns: service_name \"{}\" is not name or name:port; no nodes", sn);
    service->answered = true;
    service->nodes = std::make_shared<const DiscoveredNodes>();
    sink_->Publish(ref, service->nodes);
    return;
  }
  StartRound(service);
}

void DnsProvider::Unwatch(const ServiceRef& ref) {
  auto it = services_.find(ref);
  if (it == services_.end()) return;
  for (uint64_t id : it->second->queries) resolver_->Cancel(id);
  services_.erase(it);
}

bool DnsProvider::ready() const {
  for (const auto& [ref, s] : services_) {
    if (!s->answered) return false;
  }
  return true;
}

DnsProvider::Service* DnsProvider::Find(const ServiceRef& ref, uint64_t round) {
  if (stopped_) return nullptr;
  auto it = services_.find(ref);
  if (it == services_.end() || !it->second->busy || it->second->round != round) return nullptr;
  return it->second.get();
}

void DnsProvider::StartRound(Service* s) {
  ++stats_.lookups;
  s->busy = true;
  s->round = next_round_++;
  s->order_pos = 0;
  s->tried = 0;
  s->ttl = std::numeric_limits<uint32_t>::max();
  s->queries.clear();
  NextType(s);
}

void DnsProvider::NextType(Service* s) {
  while (s->order_pos < config_.order.size()) {
    DnsType t = config_.order[s->order_pos++];
    if (t == DnsType::kLast) {
      if (!s->has_last) continue;
      t = s->last;
    }
    unsigned bit = 1u << static_cast<unsigned>(t);
    if ((s->tried & bit) != 0) continue;
    s->tried |= bit;
    QueryType(s, t);
    return;
  }
  // No type has records: DNS says the service has no nodes.
  s->records.clear();
  s->addrs.clear();
  Finish(s, true, nullptr);
}

void DnsProvider::QueryType(Service* s, DnsType type) {
  s->current = type;
  ++stats_.queries;
  uint64_t round = s->round;
  ServiceRef ref = s->ref;
  uint64_t id = resolver_->Query(
      s->name, RecordType(type), [this, ref, round, type](const AresResolver::Answer& answer) {
        Service* s = Find(ref, round);
        if (s == nullptr) return;
        if (answer.status == ARES_ENODATA || answer.status == ARES_ENOTFOUND) {
          NextType(s);
          return;
        }
        if (answer.status != ARES_SUCCESS) {
          Finish(s, false, ares_strerror(answer.status));
          return;
        }
        std::vector<DnsRecord> records;
        if (!ParseDnsAnswer(answer.message, RecordType(type), &records)) {
          Finish(s, false, "malformed answer");
          return;
        }
        if (records.empty()) {
          NextType(s);
          return;
        }
        for (const DnsRecord& r : records) s->ttl = std::min(s->ttl, r.ttl);
        s->records = std::move(records);
        if (type == DnsType::kSrv || type == DnsType::kCname) {
          if (type == DnsType::kCname) s->records.resize(1);  // a name has one alias
          s->addrs.assign(s->records.size(), {});
          s->targets_left = s->records.size();
          // Copies: a finishing target may clear s->records.
          std::vector<std::string> targets;
          for (const DnsRecord& r : s->records) targets.push_back(r.target);
          for (size_t i = 0; i < targets.size(); ++i) {
            Service* cur = Find(ref, round);
            if (cur == nullptr) return;  // finished (failed) meanwhile
            if (targets[i].empty()) {    // "." : no service at this record (RFC 2782)
              TargetDone(cur);
            } else if (IsIp(targets[i])) {
              cur->addrs[i].push_back(targets[i]);
              TargetDone(cur);
            } else {
              ResolveTarget(cur, i, targets[i], false);
            }
          }
          return;
        }
        s->addrs.clear();
        Finish(s, true, nullptr);
      });
  s->queries.push_back(id);
}

void DnsProvider::ResolveTarget(Service* s, size_t index, const std::string& name, bool aaaa) {
  ++stats_.queries;
  uint64_t round = s->round;
  ServiceRef ref = s->ref;
  int type = aaaa ? ns_t_aaaa : ns_t_a;
  uint64_t id = resolver_->Query(
      name, type, [this, ref, round, index, name, aaaa, type](const AresResolver::Answer& answer) {
        Service* s = Find(ref, round);
        if (s == nullptr) return;
        if (answer.status == ARES_ENODATA || answer.status == ARES_ENOTFOUND) {
          if (!aaaa) {
            ResolveTarget(s, index, name, true);
          } else {
            TargetDone(s);  // a target without addresses gives no node
          }
          return;
        }
        std::vector<DnsRecord> records;
        if (answer.status != ARES_SUCCESS) {
          Finish(s, false, ares_strerror(answer.status));
          return;
        }
        if (!ParseDnsAnswer(answer.message, type, &records)) {
          Finish(s, false, "malformed answer");
          return;
        }
        if (records.empty() && !aaaa) {
          ResolveTarget(s, index, name, true);
          return;
        }
        for (DnsRecord& r : records) {
          s->ttl = std::min(s->ttl, r.ttl);
          s->addrs[index].push_back(std::move(r.address));
        }
        TargetDone(s);
      });
  s->queries.push_back(id);
}

void DnsProvider::TargetDone(Service* s) {
  if (--s->targets_left == 0) Finish(s, true, nullptr);
}

void DnsProvider::Finish(Service* s, bool ok, const char* error) {
  for (uint64_t id : s->queries) resolver_->Cancel(id);
  s->queries.clear();
  s->busy = false;
  uint64_t now = uv_now(loop_);
  if (!ok) {
    ++stats_.failures;
    if (!s->failing) {
      spdlog::warn("discovery dns: {} lookup of {} failed ({}), {}", TypeName(s->current), s->name,
                   error, s->answered ? "keeping its last nodes" : "no nodes yet");
    }
    s->failing = true;
    s->next_ms = now + config_.retry_ms;
    if (!s->answered) {
      s->answered = true;
      s->nodes = std::make_shared<const DiscoveredNodes>();
      sink_->Publish(s->ref, s->nodes);
    }
    return;
  }
  auto nodes = std::make_shared<DiscoveredNodes>();
  bool any = s->tried != 0 && !s->records.empty();
  DnsType type = s->current;
  if (type == DnsType::kSrv && any) {
    for (size_t i = 0; i < s->records.size(); ++i) {
      const DnsRecord& r = s->records[i];
      const std::vector<std::string>& addrs = s->addrs[i];
      if (addrs.empty()) continue;
      int weight = r.weight == 0 ? 1 : r.weight;
      int share = std::max(1, weight / static_cast<int>(addrs.size()));
      for (const std::string& a : addrs) {
        nodes->push_back(DiscoveredNode{a, s->port != 0 ? s->port : r.port, share, -r.priority});
      }
    }
  } else if (type == DnsType::kCname && any) {
    for (const std::string& a : s->addrs[0]) nodes->push_back(DiscoveredNode{a, s->port, 1, 0});
  } else if (any) {
    for (const DnsRecord& r : s->records) {
      nodes->push_back(DiscoveredNode{r.address, s->port, 1, 0});
    }
  }
  if (any) {
    s->has_last = true;
    s->last = type;
  }
  if (s->failing) spdlog::info("discovery dns: {} resolves again", s->name);
  s->failing = false;
  s->answered = true;
  uint32_t ttl = any ? s->ttl : 0;
  uint64_t ttl_ms = uint64_t{ttl} * 1000;
  s->next_ms = now + std::clamp(ttl_ms, config_.min_refresh_ms, config_.max_refresh_ms);
  s->records.clear();
  s->addrs.clear();
  s->nodes = nodes;
  s->nodes_type = type;
  s->nodes_found = any;
  sink_->Publish(s->ref, std::move(nodes));  // the Directory drops an equal list
}

void DnsProvider::Tick() {
  uint64_t now = uv_now(loop_);
  std::vector<Service*> due;
  for (auto& [ref, s] : services_) {
    if (s->valid && !s->busy && s->answered && now >= s->next_ms) due.push_back(s.get());
  }
  for (Service* s : due) StartRound(s);
}

nlohmann::json DnsProvider::Dump() const {
  nlohmann::json conf = nlohmann::json::object();
  if (!config_.resolv_conf.empty()) {
    conf["resolv_conf"] = config_.resolv_conf;
  } else {
    conf["servers"] = config_.servers;
  }
  nlohmann::json order = nlohmann::json::array();
  for (DnsType t : config_.order) order.push_back(TypeName(t));
  conf["order"] = std::move(order);
  nlohmann::json services = nlohmann::json::object();
  uint64_t now = started_ && !stopped_ ? uv_now(loop_) : 0;
  for (const auto& [ref, s] : services_) {
    nlohmann::json entry = {{"answered", s->answered}, {"failing", s->failing}};
    if (s->nodes) {
      // APISIX's dns nodes: {host, weight, port when known, priority for SRV records}.
      nlohmann::json nodes = nlohmann::json::array();
      for (const DiscoveredNode& n : *s->nodes) {
        nlohmann::json node = {{"host", n.host}, {"weight", n.weight}};
        if (n.port != 0) node["port"] = n.port;
        if (s->nodes_type == DnsType::kSrv) node["priority"] = n.priority;
        nodes.push_back(std::move(node));
      }
      entry["nodes"] = std::move(nodes);
      if (s->nodes_found) entry["record_type"] = TypeName(s->nodes_type);
    }
    if (s->answered && s->valid && !s->busy && now != 0) {
      entry["next_lookup_ms"] = s->next_ms > now ? s->next_ms - now : 0;
    }
    services[ref.service_name] = std::move(entry);
  }
  return {{"config", std::move(conf)}, {"services", std::move(services)}};
}

StatusOr<std::unique_ptr<DiscoveryProvider>> DnsProviderFactory::Create(
    const nlohmann::json& conf) const {
  StatusOr<DnsProviderConfig> c = ParseDnsProviderConfig(conf);
  if (!c.ok()) return c.status();
  return std::unique_ptr<DiscoveryProvider>(std::make_unique<DnsProvider>(std::move(c).value()));
}

}  // namespace turnpike::discovery
