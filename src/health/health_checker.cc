#include "health/health_checker.h"

#include <arpa/inet.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <tuple>
#include <utility>

#include "health/tcp_probe.h"

namespace turnpike::health {

using upstream::Outcome;

struct HealthChecker::Target {
  std::string ip;
  uint16_t port = 0;        // probed port (checks.active.port or the node's)
  std::string hostname;     // checks.active.host, or the ip
  std::string host_header;  // the probe's Host
  http_client::Origin origin;
  upstream::TargetState state;
  uint64_t next_ms = 0;  // loop time of the next active probe
  bool probing = false;
  http_client::RequestHandle http;
  TcpProbe* tcp = nullptr;

  void CancelProbe() {
    http.Cancel();
    if (tcp != nullptr) std::exchange(tcp, nullptr)->Cancel();
    probing = false;
  }
};

struct HealthChecker::Checker {
  Binding binding;
  bool started = false;
  upstream::NodeSetConstSharedPtr nodes;  // the set the targets were made from
  std::vector<std::unique_ptr<Target>> targets;
  // (node ip, node port) -> its target: node addresses of passive reports and
  // health snapshots.
  std::map<std::pair<std::string, uint16_t>, Target*> by_node;
  int in_flight = 0;
  bool dirty = false;  // some target crossed sides since the last Publish
  std::vector<upstream::HealthSnapshot::Addr> down;  // as last published
  uint64_t warned_ms = 0;
  bool warned = false;

  ~Checker() {
    for (auto& t : targets) t->CancelProbe();
  }
};

namespace {

// Where a status goes in a check's lists: kSuccess, kHttpFailure, or nullopt
// (ignored). lua-resty-healthcheck counts a missing status (0: a bad status
// line) as a failure.
std::optional<Outcome> Classify(int status, const std::vector<int>& healthy,
                                const std::vector<int>& unhealthy) {
  if (std::find(healthy.begin(), healthy.end(), status) != healthy.end()) return Outcome::kSuccess;
  if (status == 0 || std::find(unhealthy.begin(), unhealthy.end(), status) != unhealthy.end()) {
    return Outcome::kHttpFailure;
  }
  return std::nullopt;
}

int ActiveLimit(const config::ActiveCheckSpec& a, Outcome o) {
  switch (o) {
    case Outcome::kSuccess:
      return a.healthy_successes;
    case Outcome::kHttpFailure:
      return a.unhealthy_http_failures;
    case Outcome::kTcpFailure:
      return a.unhealthy_tcp_failures;
    case Outcome::kTimeout:
      return a.unhealthy_timeouts;
  }
  return 0;
}

int PassiveLimit(const config::PassiveCheckSpec& p, Outcome o) {
  switch (o) {
    case Outcome::kSuccess:
      return p.healthy_successes;
    case Outcome::kHttpFailure:
      return p.unhealthy_http_failures;
    case Outcome::kTcpFailure:
      return p.unhealthy_tcp_failures;
    case Outcome::kTimeout:
      return p.unhealthy_timeouts;
  }
  return 0;
}

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kSuccess:
      return "success";
    case Outcome::kHttpFailure:
      return "http failure";
    case Outcome::kTcpFailure:
      return "tcp failure";
    case Outcome::kTimeout:
      return "timeout";
  }
  return "";
}

bool IsIpLiteral(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// A report's node address as (ip text, port).
std::pair<std::string, uint16_t> AddrOf(const upstream::NodeAddr& a) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.family() == AF_INET6) {
    inet_ntop(AF_INET6, &a.v6.sin6_addr, text, sizeof(text));
    return {text, ntohs(a.v6.sin6_port)};
  }
  inet_ntop(AF_INET, &a.v4.sin_addr, text, sizeof(text));
  return {text, ntohs(a.v4.sin_port)};
}

uint64_t IntervalMs(const config::ActiveCheckSpec& a, const upstream::TargetState& s) {
  return static_cast<uint64_t>(s.up() ? a.healthy_interval : a.unhealthy_interval) * 1000;
}

}  // namespace

HealthChecker::HealthChecker(uv_loop_t* loop, Options options)
    : loop_(loop), options_(options), client_(loop) {}

HealthChecker::~HealthChecker() = default;

void HealthChecker::Start() {
  if (started_) return;
  started_ = true;
  uv_timer_init(loop_, &tick_);
  tick_.data = this;
  UpdateTimer();
}

void HealthChecker::UpdateTimer() {
  if (!started_ || stopped_) return;
  // No upstream with checks: no tick, so a config without checks costs nothing at all.
  if (checkers_.empty()) {
    uv_timer_stop(&tick_);
  } else if (uv_is_active(reinterpret_cast<uv_handle_t*>(&tick_)) == 0) {
    uv_timer_start(
        &tick_, [](uv_timer_t* t) { static_cast<HealthChecker*>(t->data)->Tick(); },
        options_.tick_ms, options_.tick_ms);
  }
}

void HealthChecker::Stop() {
  if (stopped_) return;
  stopped_ = true;
  checkers_.clear();  // cancels the probes in flight
  client_.Close();
  if (started_) uv_close(reinterpret_cast<uv_handle_t*>(&tick_), nullptr);
}

void HealthChecker::Apply(std::vector<Binding> bindings) {
  if (stopped_) return;
  std::unordered_map<const upstream::HealthSlot*, std::unique_ptr<Checker>> old;
  for (auto& c : checkers_) old.emplace(c->binding.health.get(), std::move(c));
  checkers_.clear();
  for (Binding& b : bindings) {
    auto it = old.find(b.health.get());
    std::unique_ptr<Checker> c;
    if (it != old.end() && it->second != nullptr) {
      c = std::move(it->second);  // same checks: same checker, targets keep their state
    } else {
      c = std::make_unique<Checker>();
    }
    c->binding = std::move(b);
    checkers_.push_back(std::move(c));
  }
  // `old` drops the checkers no upstream has any more (their probes are cancelled).
  UpdateTimer();
}

void HealthChecker::Tick() {
  if (stopped_) return;
  const uint64_t now = uv_now(loop_);
  for (auto& c : checkers_) {
    if (!c->started) {
      if (!c->binding.health->used()) continue;
      StartChecker(c.get(), now);
    }
    if (c->binding.nodes->Peek() != c->nodes.get()) Retarget(c.get(), now);
    DrainPassive(c.get());
    RunProbes(c.get(), now);
    Publish(c.get(), now);
  }
}

void HealthChecker::StartChecker(Checker* c, uint64_t now) {
  c->started = true;
  spdlog::info("health check: {} started ({} checks)", c->binding.name,
               c->binding.checks->active.type);
  Retarget(c, now);
}

void HealthChecker::Retarget(Checker* c, uint64_t now) {
  const config::ActiveCheckSpec& a = c->binding.checks->active;
  c->nodes = c->binding.nodes->Load();
  std::map<std::tuple<std::string, uint16_t, std::string>, std::unique_ptr<Target>> old;
  for (auto& t : c->targets) {
    auto key = std::make_tuple(t->ip, t->port, t->hostname);
    old.emplace(std::move(key), std::move(t));
  }
  c->targets.clear();
  c->by_node.clear();
  std::map<std::tuple<std::string, uint16_t, std::string>, Target*> made;
  for (const upstream::Node& node : c->nodes->nodes) {
    const auto port = static_cast<uint16_t>(a.port != 0 ? a.port : node.port);
    std::string hostname = a.host.empty() ? node.ip_text.str() : a.host;
    auto key = std::make_tuple(node.ip_text.str(), port, hostname);
    Target* target = nullptr;
    if (auto m = made.find(key); m != made.end()) {
      target = m->second;
    } else {
      std::unique_ptr<Target> t;
      if (auto o = old.find(key); o != old.end()) {
        t = std::move(o->second);  // kept: its state and its probe in flight
      } else {
        t = std::make_unique<Target>();
        t->ip = node.ip_text.str();
        t->port = port;
        t->hostname = std::move(hostname);
        http_client::Origin::FromIp(t->ip, t->port, &t->origin);
        t->next_ms = now + IntervalMs(a, t->state);  // the first probe after one interval
      }
      // lua-resty-healthcheck: Host is the target's host header, else its
      // hostname.
      t->host_header = c->binding.pass_host_node && !IsIpLiteral(node.host.str()) ? node.host.str()
                                                                                  : t->hostname;
      target = t.get();
      made.emplace(key, target);
      c->targets.push_back(std::move(t));
    }
    c->by_node[{node.ip_text.str(), node.port}] = target;
  }
  for (auto& [key, t] : old) {
    if (t == nullptr) continue;
    if (t->probing) --c->in_flight;
    t->CancelProbe();
  }
  c->dirty = true;
}

void HealthChecker::DrainPassive(Checker* c) {
  upstream::HealthSlot& slot = *c->binding.health;
  if (!slot.passive()) return;
  const config::PassiveCheckSpec& p = *c->binding.checks->passive;
  slot.Drain([&](const upstream::PassiveReport& r) {
    auto it = c->by_node.find(AddrOf(r.addr));
    if (it == c->by_node.end()) return;  // a node of an older set
    ++stats_.passive;
    Outcome outcome = r.outcome;
    if (r.status != 0) {
      if (p.type == "tcp") return;  // statuses count for http checks only
      std::optional<Outcome> o = Classify(r.status, p.healthy_statuses, p.unhealthy_statuses);
      if (!o) return;
      outcome = *o;
    }
    Count(c, it->second, outcome, PassiveLimit(p, outcome), "passive");
  });
}

void HealthChecker::RunProbes(Checker* c, uint64_t now) {
  const int concurrency = c->binding.checks->active.concurrency;
  for (auto& t : c->targets) {
    if (c->in_flight >= concurrency) return;
    if (t->probing || now < t->next_ms) continue;
    Probe(c, t.get());
  }
}

void HealthChecker::Probe(Checker* c, Target* t) {
  const config::ActiveCheckSpec& a = c->binding.checks->active;
  ++stats_.probes;
  t->probing = true;
  ++c->in_flight;
  if (a.type == "tcp") {
    Outcome failed = Outcome::kTcpFailure;
    t->tcp = TcpProbe::Start(
        loop_, reinterpret_cast<const sockaddr*>(&t->origin.addr), a.timeout,
        [this, c, t](Outcome o) {
          t->tcp = nullptr;
          OnProbeDone(c, t, o, 0);
        },
        &failed);
    if (t->tcp == nullptr) OnProbeDone(c, t, failed, 0);
    return;
  }
  http_client::Request req;
  req.method = a.http_method;
  req.target = a.http_path;
  req.host = t->host_header;
  req.headers = a.req_headers;
  req.body = a.http_req_body;
  req.connect_timeout = req.send_timeout = req.read_timeout = a.timeout;
  req.keep_alive = false;  // lua-resty-healthcheck sends Connection: close
  req.max_body_size = 1 << 20;
  t->http = client_.Fetch(t->origin, std::move(req), [this, c, t](http_client::Result r) {
    using http_client::Error;
    // Only the status line matters (lua-resty-healthcheck reads nothing
    // else).
    if (r.response.status != 0) {
      OnProbeDone(c, t, Outcome::kSuccess, r.response.status);
    } else if (r.error == Error::kConnectTimeout || r.error == Error::kSendTimeout ||
               r.error == Error::kReadTimeout) {
      OnProbeDone(c, t, Outcome::kTimeout, 0);
    } else if (r.error == Error::kMalformedResponse) {
      OnProbeDone(c, t, Outcome::kSuccess,
                  0);  // a bad status line: counted as status 0
    } else {
      OnProbeDone(c, t, Outcome::kTcpFailure, 0);
    }
  });
}

void HealthChecker::OnProbeDone(Checker* c, Target* t, Outcome outcome, int status) {
  const config::ActiveCheckSpec& a = c->binding.checks->active;
  t->probing = false;
  --c->in_flight;
  if (a.type != "tcp" && outcome == Outcome::kSuccess) {
    std::optional<Outcome> o = Classify(status, a.healthy_statuses, a.unhealthy_statuses);
    if (o) Count(c, t, *o, ActiveLimit(a, *o), "active");
  } else {
    Count(c, t, outcome, ActiveLimit(a, outcome), "active");
  }
  t->next_ms = uv_now(loop_) + IntervalMs(a, t->state);
}

void HealthChecker::Count(Checker* c, Target* t, Outcome outcome, int limit, const char* source) {
  if (!t->state.Report(outcome, limit)) return;
  ++stats_.transitions;
  c->dirty = true;
  spdlog::warn("health check: {} target {}:{} ({}) is now {} ({} {})", c->binding.name, t->ip,
               t->port, t->hostname, upstream::HealthName(t->state.health()), source,
               OutcomeName(outcome));
}

void HealthChecker::Publish(Checker* c, uint64_t now) {
  if (c->dirty) {
    c->dirty = false;
    std::vector<upstream::HealthSnapshot::Addr> down;
    for (const upstream::Node& node : c->nodes->nodes) {
      auto it = c->by_node.find({node.ip_text.str(), node.port});
      if (it != c->by_node.end() && !it->second->state.up())
        down.push_back({node.ip_text.str(), node.port});
    }
    std::sort(down.begin(), down.end());
    down.erase(std::unique(down.begin(), down.end()), down.end());
    if (down != c->down || c->binding.health->Peek() == nullptr) {
      c->down = down;
      auto snapshot = std::make_shared<upstream::HealthSnapshot>();
      snapshot->down = std::move(down);
      c->binding.health->Store(std::move(snapshot));  // the old one is freed here
      ++stats_.published;
    }
  }
  size_t node_addrs = c->by_node.size();
  const bool all_down = node_addrs != 0 && c->down.size() >= node_addrs;
  if (!all_down) {
    c->warned = false;
  } else if (!c->warned || now - c->warned_ms >= options_.all_down_warn_ms) {
    c->warned = true;
    c->warned_ms = now;
    spdlog::warn("health check: {}: all {} nodes are unhealthy, using all of them", c->binding.name,
                 node_addrs);
  }
}

std::vector<TargetStatus> HealthChecker::Statuses() const {
  std::vector<TargetStatus> out;
  for (const auto& c : checkers_) {
    if (!c->started) continue;
    for (const auto& t : c->targets) {
      out.push_back({c->binding.name, t->ip, t->port, t->state.up()});
    }
  }
  return out;
}

std::string HealthChecker::CheckerJson(const Checker& c) const {
  nlohmann::json j = {{"name", c.binding.name}, {"type", c.binding.checks->active.type}};
  if (c.started) {
    nlohmann::json nodes = nlohmann::json::array();
    for (const auto& t : c.targets) {
      nodes.push_back({{"ip", t->ip},
                       {"port", t->port},
                       {"hostname", t->hostname},
                       {"status", upstream::HealthName(t->state.health())},
                       {"counter",
                        {{"success", t->state.successes()},
                         {"http_failure", t->state.http_failures()},
                         {"tcp_failure", t->state.tcp_failures()},
                         {"timeout_failure", t->state.timeouts()}}}});
    }
    j["nodes"] = std::move(nodes);
  }
  return j.dump();
}

std::string HealthChecker::AllJson() const {
  if (checkers_.empty()) return "{}";
  std::string out = "[";
  for (const auto& c : checkers_) {
    if (out.size() > 1) out.push_back(',');
    out += CheckerJson(*c);
  }
  out.push_back(']');
  return out;
}

std::optional<std::string> HealthChecker::OneJson(std::string_view name) const {
  for (const auto& c : checkers_) {
    if (c->binding.name == name) return CheckerJson(*c);
  }
  return std::nullopt;
}

}  // namespace turnpike::health
