#include "discovery/consul_provider.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <utility>

#include "base/courtesy.h"
#include "discovery/ares_resolver.h"

namespace turnpike::discovery {
namespace {

using http_client::Result;

// APISIX's get_retry_delay: 1, 4, 16, 64, 256, then 1 again.
constexpr int kRetrySteps = 5;

// Consul's service names are DNS labels in practice; anything else is percent-encoded so the
// request target stays valid.
std::string EscapePathSegment(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

// "connect failed", "status 500", ... for logs.
std::string Describe(const Result& r) {
  if (!r.ok()) {
    std::string s(http_client::ErrorName(r.error));
    if (r.uv_error != 0) s += std::string(" (") + uv_strerror(r.uv_error) + ")";
    return s;
  }
  return "status " + std::to_string(r.response.status);
}

}  // namespace

struct ConsulProvider::Server {
  enum class State { kIdle, kRound, kWatching };

  ConsulProvider* provider = nullptr;
  ConsulServer conf;
  http_client::Origin origin;  // conf.origin, or the last address conf.name resolved to
  uint64_t lookup = 0;         // resolver id in flight
  uint64_t catalog_index = 0;
  uint64_t health_index = 0;
  State state = State::kIdle;
  uv_timer_t timer{};
  Next next = Next::kRound;
  bool backing_off = false;  // kIdle after an error (a Watch() does not cut it short)
  int retry_step = 0;
  bool first_done = false;  // a first round finished, well or not
  bool failing = false;     // logged once per failure streak
  // The round in flight.
  int stage = 0;  // 0: catalog, 1: health state, 2: services
  http_client::RequestHandle request;
  uint64_t new_catalog_index = 0;
  uint64_t new_health_index = 0;
  std::set<std::string> round_catalog;
  std::vector<std::string> to_fetch;
  size_t fetch_pos = 0;
  std::map<std::string, DiscoveredNodesConstSharedPtr> round_result;
  // The blocking queries: [0] catalog, [1] health state.
  http_client::RequestHandle watch[2];
  uint64_t watch_sent_ms[2] = {0, 0};
  // The last applied round.
  std::map<std::string, DiscoveredNodesConstSharedPtr> services;  // what this server lists
  std::set<std::string> catalog;                                  // its catalog's names
  std::set<std::string> fetched;                                  // names it fetched
};

ConsulProvider::ConsulProvider(ConsulConfig config) : config_(std::move(config)) {
  skip_.insert(config_.skip_services.begin(), config_.skip_services.end());
  skip_.insert("consul");  // APISIX's default_skip_services
  default_nodes_ =
      config_.has_default_service
          ? std::make_shared<const DiscoveredNodes>(DiscoveredNodes{config_.default_service})
          : std::make_shared<const DiscoveredNodes>();
}

ConsulProvider::~ConsulProvider() = default;

Status ConsulProvider::Start(const DiscoveryEnvironment& env) {
  sink_ = env.sink;
  loop_ = env.loop;
  client_ = std::make_unique<http_client::Client>(loop_);
  if (config_.has_dump && config_.dump_load_on_init) {
    std::ifstream in(config_.dump_path, std::ios::binary);
    if (!in) {
      spdlog::error("discovery consul: read dump file {}: {}", config_.dump_path,
                    std::strerror(errno));
    } else {
      std::stringstream text;
      text << in.rdbuf();
      StatusOr<ConsulServices> loaded = DecodeConsulDump(
          text.str(), static_cast<int64_t>(std::time(nullptr)), config_.dump_expire_s);
      if (!loaded.ok()) {
        spdlog::warn("discovery consul: {} ignored: {}", config_.dump_path,
                     loaded.status().message());
      } else {
        for (auto& [name, nodes] : loaded.value()) {
          all_[name] = std::make_shared<const DiscoveredNodes>(std::move(nodes));
        }
        spdlog::info("discovery consul: {} services loaded from {}", all_.size(),
                     config_.dump_path);
      }
    }
  }
  uv_timer_init(loop_, &dump_timer_);
  dump_timer_.data = this;
  for (const ConsulServer& conf : config_.servers) {
    if (!conf.name.empty() && resolver_ == nullptr) {
      resolver_ = std::make_unique<AresResolver>(loop_);
      if (Status st = resolver_->Start(); !st.ok()) {
        spdlog::error("discovery consul: {} (servers given by name will not resolve)",
                      st.message());
      }
    }
    auto s = std::make_unique<Server>();
    s->provider = this;
    s->conf = conf;
    s->origin = conf.origin;
    uv_timer_init(loop_, &s->timer);
    s->timer.data = s.get();
    servers_.push_back(std::move(s));
  }
  started_ = true;
  for (auto& s : servers_) Schedule(s.get(), 0, Next::kRound);
  return Status::Ok();
}

void ConsulProvider::Stop() {
  if (stopped_) return;
  stopped_ = true;
  for (auto& s : servers_) {
    s->request.Cancel();
    s->watch[0].Cancel();
    s->watch[1].Cancel();
    uv_close(reinterpret_cast<uv_handle_t*>(&s->timer), nullptr);
  }
  if (resolver_) resolver_->Stop();
  if (started_) {
    if (dump_dirty_) WriteDump();
    uv_close(reinterpret_cast<uv_handle_t*>(&dump_timer_), nullptr);
  }
  if (client_) client_->Close();
}

bool ConsulProvider::ready() const {
  for (const auto& s : servers_) {
    if (!s->first_done) return false;
  }
  return true;
}

nlohmann::json ConsulProvider::Dump() const {
  nlohmann::json services = nlohmann::json::object();
  for (const auto& [name, nodes] : all_) services[name] = ConsulNodesToJson(*nodes);
  return {{"config", config_.effective}, {"services", std::move(services)}};
}

DiscoveredNodesConstSharedPtr ConsulProvider::View(const std::string& name) const {
  auto it = all_.find(name);
  if (it != all_.end()) return it->second;
  return default_nodes_;
}

void ConsulProvider::PublishAll(bool only_unpublished) {
  for (const ServiceRef& ref : watched_) {
    if (only_unpublished && published_.count(ref) != 0) continue;
    published_.insert(ref);
    sink_->Publish(ref, View(ref.service_name));
  }
}

bool ConsulProvider::FetchPending(const std::string& name) const {
  if (skip_.count(name) != 0) return false;
  for (const auto& s : servers_) {
    if (!s->first_done) return true;
    if (s->catalog.count(name) != 0 && s->fetched.count(name) == 0) return true;
    if (s->state == Server::State::kRound && s->round_catalog.count(name) != 0) return true;
  }
  return false;
}

void ConsulProvider::Watch(const ServiceRef& ref) {
  if (stopped_ || !watched_.insert(ref).second) return;
  const std::string& name = ref.service_name;
  // Known now (the dump's or a server's nodes), or no server will say more until something
  // changes: publish. Else the coming round does (or its failure: last good or nothing).
  if (all_.count(name) != 0 || !FetchPending(name)) {
    published_.insert(ref);
    sink_->Publish(ref, View(name));
  }
  if (skip_.count(name) != 0) return;
  for (auto& sp : servers_) {
    Server* s = sp.get();
    switch (s->state) {
      case Server::State::kRound:
        // Before stage 2 the fetch list is still to be made; during it, join it.
        if (s->stage == 2 && s->round_catalog.count(name) != 0 &&
            std::find(s->to_fetch.begin(), s->to_fetch.end(), name) == s->to_fetch.end()) {
          s->to_fetch.push_back(name);
        }
        break;
      case Server::State::kWatching:
        if (s->catalog.count(name) != 0 && s->fetched.count(name) == 0) {
          s->watch[0].Cancel();
          s->watch[1].Cancel();
          Schedule(s, 0, Next::kRound);  // coalesces the Watch() calls of one reload
        }
        break;
      case Server::State::kIdle:
        if (!s->backing_off && s->first_done && s->catalog.count(name) != 0 &&
            s->fetched.count(name) == 0) {
          Schedule(s, 0, Next::kRound);
        }
        break;
    }
  }
}

void ConsulProvider::Unwatch(const ServiceRef& ref) {
  // Its nodes stay in the merged view until a round of the server that listed it (which no
  // longer fetches it) drops them.
  watched_.erase(ref);
  published_.erase(ref);
}

http_client::Request ConsulProvider::MakeRequest(std::string target, bool blocking) const {
  http_client::Request req;
  req.target = std::move(target);
  if (!config_.token.empty()) req.headers.emplace_back("X-Consul-Token", config_.token);
  req.connect_timeout = config_.connect_timeout_ms / 1000.0;
  req.read_timeout = config_.read_timeout_ms / 1000.0;
  // Consul adds up to wait/16 of jitter to a blocking query (as lua-resty-consul allows for).
  if (blocking) req.read_timeout += config_.wait_s * 17.0 / 16.0;
  req.max_body_size = 64 << 20;
  return req;
}

void ConsulProvider::Schedule(Server* s, uint64_t delay_ms, Next next) {
  // kWatch: a watch waits out min_rewatch_ms while the other may be in flight: still watching.
  if (next == Next::kRound) s->state = Server::State::kIdle;
  s->next = next;
  uv_timer_start(
      &s->timer,
      [](uv_timer_t* t) {
        auto* server = static_cast<Server*>(t->data);
        server->provider->OnTimer(server);
      },
      delay_ms, 0);
}

void ConsulProvider::OnTimer(Server* s) {
  if (stopped_) return;
  s->backing_off = false;
  if (s->next == Next::kRound) {
    StartRound(s);
  } else {
    s->state = Server::State::kWatching;
    for (int i = 0; i < 2; ++i) {
      if (!s->watch[i].active()) SendWatch(s, i == 0);
    }
  }
}

void ConsulProvider::StartRound(Server* s) {
  uv_timer_stop(&s->timer);
  s->watch[0].Cancel();
  s->watch[1].Cancel();
  ++stats_.rounds;
  s->state = Server::State::kRound;
  s->stage = 0;
  s->round_catalog.clear();
  s->to_fetch.clear();
  s->fetch_pos = 0;
  s->round_result.clear();
  if (!s->conf.name.empty()) {
    Resolve(s);
    return;
  }
  RoundStep(s);
}

void ConsulProvider::Resolve(Server* s) {
  if (s->lookup != 0) resolver_->Cancel(s->lookup);
  s->lookup = resolver_->Resolve(s->conf.name, [this, s](const Resolution& r) {
    s->lookup = 0;
    if (!r.ok) {
      RoundFailed(s, "resolve " + s->conf.name + ": " + r.error);
      return;
    }
    std::memcpy(&s->origin.addr, &r.addr, sizeof(r.addr));
    s->origin.len = r.addr_len;
    auto port = htons(static_cast<uint16_t>(s->conf.port));
    if (r.addr.ss_family == AF_INET6) {
      reinterpret_cast<sockaddr_in6*>(&s->origin.addr)->sin6_port = port;
    } else {
      reinterpret_cast<sockaddr_in*>(&s->origin.addr)->sin_port = port;
    }
    RoundStep(s);
  });
}

void ConsulProvider::RoundStep(Server* s) {
  std::string target;
  if (s->stage == 0) {
    target = "/v1/catalog/services";
  } else if (s->stage == 1) {
    target = "/v1/health/state/any";
  } else if (s->fetch_pos < s->to_fetch.size()) {
    target = "/v1/health/service/" + EscapePathSegment(s->to_fetch[s->fetch_pos]) + "?passing=true";
    ++stats_.service_fetches;
  } else {
    ApplyRound(s);
    return;
  }
  s->request = client_->Fetch(s->origin, MakeRequest(std::move(target), false),
                              [this, s](Result r) { OnRoundAnswer(s, std::move(r)); });
}

void ConsulProvider::OnRoundAnswer(Server* s, Result r) {
  base::IdleScope idle;  // the answer's parse, and the Directory's work after
  if (!r.ok() || r.response.status != 200) {
    RoundFailed(s, Describe(r));
    return;
  }
  std::optional<uint64_t> index = ParseConsulIndex(r.response.Header("X-Consul-Index"));
  if (s->stage == 0) {
    std::vector<std::string> names;
    if (!index) return RoundFailed(s, "catalog/services: no X-Consul-Index");
    if (!ParseCatalogServices(r.response.body, &names)) {
      return RoundFailed(s, "catalog/services: not a JSON object");
    }
    s->new_catalog_index = *index;
    s->round_catalog.insert(names.begin(), names.end());
    s->stage = 1;
  } else if (s->stage == 1) {
    if (!index) return RoundFailed(s, "health/state/any: no X-Consul-Index");
    s->new_health_index = *index;
    for (const ServiceRef& ref : watched_) {  // sorted by name: equal names are adjacent
      const std::string& n = ref.service_name;
      if (s->round_catalog.count(n) != 0 && skip_.count(n) == 0 &&
          (s->to_fetch.empty() || s->to_fetch.back() != n)) {
        s->to_fetch.push_back(n);
      }
    }
    bool unchanged = s->first_done && !s->failing && s->new_catalog_index == s->catalog_index &&
                     s->new_health_index == s->health_index &&
                     std::all_of(s->to_fetch.begin(), s->to_fetch.end(),
                                 [s](const std::string& n) { return s->fetched.count(n) != 0; });
    if (unchanged && !config_.keepalive) {
      // Polling and nothing moved: the last answer stands.
      Schedule(s, uint64_t(config_.fetch_interval_s) * 1000, Next::kRound);
      return;
    }
    s->stage = 2;
  } else {
    auto nodes = std::make_shared<DiscoveredNodes>();
    const std::string& name = s->to_fetch[s->fetch_pos];
    if (!ParseHealthService(r.response.body, config_.weight, config_.sort, nodes.get())) {
      return RoundFailed(s, "health/service/" + name + ": not a JSON array");
    }
    // No passing instance: not listed (APISIX's is_not_empty).
    if (!nodes->empty()) s->round_result[name] = std::move(nodes);
    ++s->fetch_pos;
  }
  RoundStep(s);
}

void ConsulProvider::RoundFailed(Server* s, const std::string& what) {
  ++stats_.failures;
  s->request.Cancel();
  if (s->lookup != 0) {
    resolver_->Cancel(s->lookup);
    s->lookup = 0;
  }
  uint64_t delay = config_.retry_base_ms;
  for (int i = 0; i < s->retry_step; ++i) delay *= 4;
  s->retry_step = (s->retry_step + 1) % kRetrySteps;
  if (!s->failing) {
    spdlog::warn("discovery consul: {}: {}, {}; retrying in {} ms", s->conf.url, what,
                 s->first_done ? "keeping the last nodes" : "no nodes from it yet", delay);
  }
  s->failing = true;
  Schedule(s, delay, Next::kRound);
  s->backing_off = true;
  // Services waiting for this round get what is known: the dump's nodes, the default service
  // or none (so neither they nor ready() wait for a server that is down).
  s->first_done = true;
  PublishAll(/*only_unpublished=*/true);
}

void ConsulProvider::ApplyRound(Server* s) {
  // APISIX's update_all_services: what this server listed before and not now is removed from
  // the merged view; what it lists now overwrites.
  bool changed = s->round_result.size() != s->services.size();
  for (const auto& [name, nodes] : s->services) {
    auto now = s->round_result.find(name);
    if (now == s->round_result.end()) {
      all_.erase(name);
      changed = true;
    } else if (!changed && *now->second != *nodes) {
      changed = true;
    }
  }
  for (const auto& [name, nodes] : s->round_result) {
    auto it = all_.find(name);
    // Keep the old pointer when equal: the Directory then compares nothing but pointers.
    if (it == all_.end() || *it->second != *nodes) all_[name] = nodes;
  }
  s->services = std::move(s->round_result);
  s->round_result.clear();
  s->catalog = std::move(s->round_catalog);
  s->round_catalog.clear();
  s->fetched = std::set<std::string>(s->to_fetch.begin(), s->to_fetch.end());
  // The round's indexes, also when they went backwards (Consul restarted: its docs say to
  // start over from the new index).
  s->catalog_index = s->new_catalog_index;
  s->health_index = s->new_health_index;
  if (s->failing) spdlog::info("discovery consul: {} answers again", s->conf.url);
  s->failing = false;
  s->retry_step = 0;
  s->first_done = true;
  PublishAll(/*only_unpublished=*/false);
  if (changed) MarkDumpDirty();  // (a first round before any Watch() leaves the file alone)
  if (config_.keepalive) {
    StartWatches(s);
  } else {
    Schedule(s, uint64_t(config_.fetch_interval_s) * 1000, Next::kRound);
  }
}

void ConsulProvider::StartWatches(Server* s) {
  s->state = Server::State::kWatching;
  SendWatch(s, true);
  SendWatch(s, false);
}

void ConsulProvider::SendWatch(Server* s, bool catalog) {
  int i = catalog ? 0 : 1;
  uint64_t index = catalog ? s->catalog_index : s->health_index;
  std::string target = catalog ? "/v1/catalog/services" : "/v1/health/state/any";
  target += "?index=" + std::to_string(index) + "&wait=" + std::to_string(config_.wait_s) + "s";
  ++stats_.watches;
  s->watch_sent_ms[i] = uv_now(loop_);
  s->watch[i] =
      client_->Fetch(s->origin, MakeRequest(std::move(target), true),
                     [this, s, catalog](Result r) { OnWatchDone(s, catalog, std::move(r)); });
}

void ConsulProvider::OnWatchDone(Server* s, bool catalog, Result r) {
  base::IdleScope idle;  // the answer's parse, and the Directory's work after
  int i = catalog ? 0 : 1;
  std::optional<uint64_t> index;
  if (r.ok() && r.response.status == 200)
    index = ParseConsulIndex(r.response.Header("X-Consul-Index"));
  if (!index) {
    s->watch[1 - i].Cancel();
    RoundFailed(s, std::string(catalog ? "catalog" : "health") + " watch: " +
                       (r.ok() && r.response.status == 200 ? "no X-Consul-Index" : Describe(r)));
    return;
  }
  uint64_t last = catalog ? s->catalog_index : s->health_index;
  if (*index == last) {
    // The wait ran out without a change: ask again, though not in a tight loop when a server
    // (or something in between) answers at once.
    uint64_t now = uv_now(loop_);
    uint64_t due = s->watch_sent_ms[i] + config_.min_rewatch_ms;
    if (now >= due) {
      SendWatch(s, catalog);
    } else {
      Schedule(s, due - now, Next::kWatch);
    }
    return;
  }
  // A new index (or one that went backwards: Consul restarted): fetch again.
  StartRound(s);
}

void ConsulProvider::MarkDumpDirty() {
  if (!config_.has_dump) return;
  dump_dirty_ = true;
  if (dump_timer_armed_) return;
  uint64_t now = uv_now(loop_);
  uint64_t due = last_dump_ms_ + config_.dump_interval_ms;
  if (!dumped_once_ || now >= due) {
    WriteDump();
    return;
  }
  dump_timer_armed_ = true;
  uv_timer_start(
      &dump_timer_,
      [](uv_timer_t* t) {
        auto* self = static_cast<ConsulProvider*>(t->data);
        self->dump_timer_armed_ = false;
        if (self->dump_dirty_ && !self->stopped_) self->WriteDump();
      },
      due - now, 0);
}

void ConsulProvider::WriteDump() {
  dump_dirty_ = false;
  dumped_once_ = true;
  last_dump_ms_ = uv_now(loop_);
  ++stats_.dump_writes;
  // What the servers list (APISIX's write_dump_services), later servers last.
  ConsulServices services;
  for (const auto& s : servers_) {
    for (const auto& [name, nodes] : s->services) services[name] = *nodes;
  }
  std::string text =
      EncodeConsulDump(services, static_cast<int64_t>(std::time(nullptr)), config_.dump_expire_s);
  std::string tmp = config_.dump_path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  bool ok = f != nullptr && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f != nullptr && std::fclose(f) != 0) ok = false;
  if (!ok || std::rename(tmp.c_str(), config_.dump_path.c_str()) != 0) {
    spdlog::error("discovery consul: write dump into {}: {}", config_.dump_path,
                  std::strerror(errno));
    std::remove(tmp.c_str());
  }
}

StatusOr<std::unique_ptr<DiscoveryProvider>> ConsulProviderFactory::Create(
    const nlohmann::json& conf) const {
  StatusOr<ConsulConfig> c = ParseConsulConfig(conf);
  if (!c.ok()) return c.status();
  return std::unique_ptr<DiscoveryProvider>(std::make_unique<ConsulProvider>(std::move(c).value()));
}

}  // namespace turnpike::discovery
