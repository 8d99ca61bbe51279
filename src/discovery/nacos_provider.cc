#include "discovery/nacos_provider.h"

#include <netinet/in.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>

#include "base/courtesy.h"
#include "discovery/nacos_api.h"
#include "discovery/node_source.h"

namespace turnpike::discovery {
namespace {

constexpr size_t kMaxInFlight = 4;  // list requests at a time, per round
constexpr const char* kDefaultNamespace = "public";
constexpr const char* kDefaultGroup = "DEFAULT_GROUP";

std::string Describe(const http_client::Result& r) {
  if (!r.ok()) {
    std::string e(http_client::ErrorName(r.error));
    if (r.uv_error != 0) e += std::string(" (") + uv_strerror(r.uv_error) + ")";
    return e;
  }
  return "status " + std::to_string(r.response.status);
}

bool ConnectProblem(const http_client::Result& r) {
  return r.error == http_client::Error::kConnectFailed ||
         r.error == http_client::Error::kConnectTimeout;
}

uint64_t WallMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

struct NacosProvider::Host {
  NacosHost conf;
  std::string host_header;  // host[:port] as configured
  bool is_name = false;
  bool have_origin = false;
  http_client::Origin origin;
  uint64_t resolved_until_ms = 0;
  std::string token;  // "" : none
  uint64_t token_until_ms = 0;
  bool failing = false;  // logged once per failure streak
};

struct NacosProvider::Service {
  std::set<ServiceRef> refs;            // the upstreams' spellings of this service
  bool answered = false;                // a first answer came (or every host failed once)
  bool failing = false;                 // logged once per failure streak
  uint64_t next_ms = 0;                 // loop time of its next fetch (0: at once)
  DiscoveredNodesConstSharedPtr nodes;  // the last list published
  bool has_hosts_text = false;
  std::string hosts_text;  // the last parsed answer's `hosts` member, as received
};

NacosProvider::NacosProvider(NacosProviderConfig config) : config_(std::move(config)) {
  for (const NacosHost& h : config_.hosts) {
    Host host;
    host.conf = h;
    host.host_header = h.port == 80 ? h.host : h.host + ":" + std::to_string(h.port);
    host.have_origin = http_client::Origin::FromIp(h.host, h.port, &host.origin);
    host.is_name = !host.have_origin;
    hosts_.push_back(std::move(host));
  }
}

NacosProvider::~NacosProvider() = default;

NacosProvider::Host& NacosProvider::current_host() {
  return hosts_[(round_start_host_ + hosts_tried_) % hosts_.size()];
}

NacosProvider::Key NacosProvider::KeyOf(const ServiceRef& ref) {
  Key key{kDefaultNamespace, kDefaultGroup, ref.service_name};
  if (auto it = ref.args.find("namespace_id"); it != ref.args.end()) key.namespace_id = it->second;
  if (auto it = ref.args.find("group_name"); it != ref.args.end()) key.group_name = it->second;
  return key;
}

Status NacosProvider::Start(const DiscoveryEnvironment& env) {
  sink_ = env.sink;
  loop_ = env.loop;
  client_ = std::make_unique<http_client::Client>(loop_);
  if (std::any_of(hosts_.begin(), hosts_.end(), [](const Host& h) { return h.is_name; })) {
    resolver_ = std::make_unique<AresResolver>(loop_);
    if (Status s = resolver_->Start(); !s.ok()) {
      // Not fatal: IP-literal hosts still work; the named ones fail their lookups.
      spdlog::error("discovery nacos: {}; host names in discovery.nacos.host will not resolve",
                    s.message());
    }
  }
  uv_timer_init(loop_, &timer_);
  timer_.data = this;
  started_ = true;
  return Status::Ok();
}

void NacosProvider::Stop() {
  if (stopped_) return;
  stopped_ = true;
  inflight_.clear();
  login_.Cancel();
  if (resolve_id_ != 0 && resolver_) resolver_->Cancel(resolve_id_);
  resolve_id_ = 0;
  services_.clear();
  if (client_) client_->Close();
  if (resolver_) resolver_->Stop();
  if (started_) uv_close(reinterpret_cast<uv_handle_t*>(&timer_), nullptr);
}

void NacosProvider::Watch(const ServiceRef& ref) {
  if (stopped_) return;
  std::unique_ptr<Service>& s = services_[KeyOf(ref)];
  bool added = s == nullptr;
  if (added) s = std::make_unique<Service>();
  if (!s->refs.insert(ref).second) return;
  if (s->nodes != nullptr) sink_->Publish(ref, s->nodes);  // another spelling had them
  if (added) Schedule();
}

void NacosProvider::Unwatch(const ServiceRef& ref) {
  Key key = KeyOf(ref);
  auto it = services_.find(key);
  if (it == services_.end()) return;
  it->second->refs.erase(ref);
  if (!it->second->refs.empty()) return;
  // A request in flight for it finishes (its answer is dropped) so that the round ends as usual;
  // todo_ and failed_ skip services no longer known.
  services_.erase(it);
}

bool NacosProvider::ready() const {
  return std::all_of(services_.begin(), services_.end(),
                     [](const auto& entry) { return entry.second->answered; });
}

nlohmann::json NacosProvider::Dump() const {
  nlohmann::json hosts = nlohmann::json::array();
  for (const NacosHost& h : config_.hosts) hosts.push_back(h.url);
  nlohmann::json config = {{"host", std::move(hosts)},
                           {"prefix", config_.prefix},
                           {"fetch_interval", config_.fetch_interval_ms / 1000},
                           {"weight", config_.weight},
                           {"timeout",
                            {{"connect", static_cast<int64_t>(config_.connect_timeout * 1000)},
                             {"send", static_cast<int64_t>(config_.send_timeout * 1000)},
                             {"read", static_cast<int64_t>(config_.read_timeout * 1000)}}},
                           {"access_key", config_.access_key}};
  nlohmann::json services = nlohmann::json::object();
  for (const auto& [key, s] : services_) {
    if (s->nodes == nullptr) continue;
    nlohmann::json nodes = nlohmann::json::array();
    for (const DiscoveredNode& n : *s->nodes) {
      nodes.push_back({{"host", n.host}, {"port", n.port}, {"weight", n.weight}});
    }
    services[key.namespace_id][key.group_name][key.service_name] = std::move(nodes);
  }
  return {{"config", std::move(config)}, {"services", std::move(services)}};
}

void NacosProvider::Schedule() {
  if (stopped_ || !started_ || in_round_) return;
  uint64_t next = UINT64_MAX;
  for (const auto& [key, s] : services_) next = std::min(next, s->next_ms);
  if (next == UINT64_MAX) {
    uv_timer_stop(&timer_);
    return;
  }
  uint64_t now = uv_now(loop_);
  uv_timer_start(
      &timer_, [](uv_timer_t* t) { static_cast<NacosProvider*>(t->data)->StartRound(); },
      next > now ? next - now : 0, 0);
}

void NacosProvider::StartRound() {
  if (stopped_ || in_round_) return;
  uv_update_time(loop_);
  uint64_t now = uv_now(loop_);
  todo_.clear();
  for (const auto& [key, s] : services_) {
    if (s->next_ms <= now) todo_.push_back(key);
  }
  if (todo_.empty()) {
    Schedule();
    return;
  }
  ++stats_.rounds;
  in_round_ = true;
  round_started_ms_ = now;
  round_start_host_ = random_() % hosts_.size();
  hosts_tried_ = 0;
  failed_.clear();
  relogged_ = false;
  awaiting_login_ = false;
  host_answered_ = false;
  host_error_.clear();
  TryHost();
}

void NacosProvider::TryHost() {
  Host& host = current_host();
  uint64_t now = uv_now(loop_);
  if (host.is_name && (!host.have_origin || now >= host.resolved_until_ms)) {
    if (!resolver_) {
      host_error_ = "no resolver for host names";
      failed_.insert(failed_.end(), todo_.begin(), todo_.end());
      todo_.clear();
      HostDone();
      return;
    }
    resolve_id_ = resolver_->Resolve(host.conf.host, [this](const Resolution& r) {
      resolve_id_ = 0;
      Host& h = current_host();
      if (!r.ok) {
        host_error_ = "lookup of " + h.conf.host + " failed: " + r.error;
        h.have_origin = false;
        failed_.insert(failed_.end(), todo_.begin(), todo_.end());
        todo_.clear();
        HostDone();
        return;
      }
      upstream::Node probe;
      SetAddress(reinterpret_cast<const sockaddr*>(&r.addr), r.addr_len,
                 static_cast<uint16_t>(h.conf.port), &probe);
      h.origin.addr = {};
      std::memcpy(&h.origin.addr, &probe.addr, probe.addr_len);
      h.origin.len = probe.addr_len;
      h.have_origin = true;
      uint64_t ttl = std::clamp<uint64_t>(r.ttl_seconds, 1, 60);
      h.resolved_until_ms = uv_now(loop_) + ttl * 1000;
      TryHost();
    });
    return;
  }
  if (host.conf.has_credentials() && (host.token.empty() || now >= host.token_until_ms)) {
    Login(&host);
    return;
  }
  FetchMore();
}

void NacosProvider::Login(Host* host) {
  ++stats_.logins;
  awaiting_login_ = false;
  host->token.clear();
  http_client::Request req;
  req.method = "POST";
  req.target = NacosLoginTarget(config_.prefix, host->conf.username, host->conf.password);
  req.host = host->host_header;
  req.headers.emplace_back("Accept", "application/json");
  req.connect_timeout = config_.connect_timeout;
  req.send_timeout = config_.send_timeout;
  req.read_timeout = config_.read_timeout;
  login_ = client_->Fetch(host->origin, std::move(req), [this](http_client::Result r) {
    Host& h = current_host();
    std::string token;
    uint64_t ttl = 0;
    if (r.ok() && r.response.status == 200 && ParseNacosLogin(r.response.body, &token, &ttl)) {
      h.token = std::move(token);
      // Without tokenTtl the token serves this round only (APISIX logs in every round).
      h.token_until_ms = uv_now(loop_) + ttl * 900;
      FetchMore();
      return;
    }
    host_error_ = "login failed: " + (r.ok() && r.response.status == 200
                                          ? std::string("no accessToken in the answer")
                                          : Describe(r));
    if (ConnectProblem(r) && h.is_name) h.have_origin = false;
    // Nothing is in flight while logging in: every service left fails on this host.
    failed_.insert(failed_.end(), todo_.begin(), todo_.end());
    todo_.clear();
    HostDone();
  });
}

void NacosProvider::FetchMore() {
  if (awaiting_login_) {
    if (inflight_.empty()) Login(&current_host());
    return;
  }
  while (!todo_.empty() && inflight_.size() < kMaxInFlight) {
    Key key = std::move(todo_.front());
    todo_.erase(todo_.begin());
    if (services_.count(key) != 0) Fetch(key);
  }
  if (todo_.empty() && inflight_.empty()) HostDone();
}

void NacosProvider::Fetch(const Key& key) {
  ++stats_.requests;
  Host& host = current_host();
  NacosListQuery q;
  q.service_name = key.service_name;
  q.namespace_id = key.namespace_id;
  q.group_name = key.group_name;
  q.access_token = host.token;
  q.access_key = config_.access_key;
  q.secret_key = config_.secret_key;
  if (!q.access_key.empty() && !q.secret_key.empty()) q.now_ms = WallMs();
  http_client::Request req;
  req.target = NacosListTarget(config_.prefix, q);
  req.host = host.host_header;
  req.headers.emplace_back("Accept", "application/json");
  req.connect_timeout = config_.connect_timeout;
  req.send_timeout = config_.send_timeout;
  req.read_timeout = config_.read_timeout;
  // ~350 bytes an instance: 64 MB holds about 190,000 (the client's default, 8 MB, ~24,000).
  req.max_body_size = uint64_t{64} << 20;
  bool with_token = !host.token.empty();
  inflight_[key] =
      client_->Fetch(host.origin, std::move(req), [this, key, with_token](http_client::Result r) {
        inflight_.erase(key);
        if (r.ok() && r.response.status == 403 && with_token && (!relogged_ || awaiting_login_)) {
          // The token expired early (or the server restarted): log in again once, then ask again.
          relogged_ = true;
          awaiting_login_ = true;
          current_host().token.clear();
          todo_.insert(todo_.begin(), key);
        } else {
          OnList(key, std::move(r));
        }
        FetchMore();
      });
}

void NacosProvider::OnList(const Key& key, http_client::Result r) {
  base::IdleScope idle;  // the answer's parse, and the Directory's work after
  auto it = services_.find(key);
  if (it == services_.end()) return;  // unwatched meanwhile
  Service* s = it->second.get();
  std::string error;
  if (r.ok() && r.response.status == 200) {
    const std::string& body = r.response.body;
    std::optional<std::string_view> hosts = FindTopLevelMember(body, "hosts");
    if (hosts && s->has_hosts_text && *hosts == s->hosts_text) {
      ++stats_.unchanged;
    } else {
      auto nodes = std::make_shared<DiscoveredNodes>();
      if (ParseNacosInstances(body, config_.weight, nodes.get(), &error)) {
        ++stats_.parsed;
        s->has_hosts_text = hosts.has_value();
        s->hosts_text = hosts ? std::string(*hosts) : std::string();
        Publish(s, std::move(nodes));
      }
    }
  } else {
    error = Describe(r);
    if (ConnectProblem(r) && current_host().is_name) current_host().have_origin = false;
  }
  if (!error.empty()) {
    ++stats_.failures;
    host_error_ = key.service_name + ": " + error;
    failed_.push_back(key);
    return;
  }
  host_answered_ = true;
  if (s->failing) {
    spdlog::info("discovery nacos: {}/{}/{} answers again", key.namespace_id, key.group_name,
                 key.service_name);
  }
  s->failing = false;
  s->answered = true;
  s->next_ms = round_started_ms_ + config_.fetch_interval_ms;
}

void NacosProvider::HostDone() {
  Host& host = current_host();
  if (!failed_.empty() && !host_answered_) {
    if (!host.failing) {
      spdlog::warn("discovery nacos: {} failed ({}){}", host.conf.url, host_error_,
                   hosts_tried_ + 1 < hosts_.size() ? ", trying the next host" : "");
    }
    host.failing = true;
  } else if (host_answered_) {
    if (host.failing) spdlog::info("discovery nacos: {} answers again", host.conf.url);
    host.failing = false;
  }
  ++hosts_tried_;
  std::erase_if(failed_, [this](const Key& k) { return services_.count(k) == 0; });
  if (!failed_.empty() && hosts_tried_ < hosts_.size()) {
    todo_ = std::move(failed_);
    failed_.clear();
    relogged_ = false;
    awaiting_login_ = false;
    host_answered_ = false;
    host_error_.clear();
    TryHost();
    return;
  }
  EndRound();
}

void NacosProvider::EndRound() {
  for (const Key& key : failed_) {
    auto it = services_.find(key);
    if (it == services_.end()) continue;
    Service* s = it->second.get();
    if (!s->failing) {
      spdlog::warn("discovery nacos: {}/{}/{} failed on every host (last: {}), {}",
                   key.namespace_id, key.group_name, key.service_name, host_error_,
                   s->answered ? "keeping its last nodes" : "no nodes yet");
    }
    s->failing = true;
    s->next_ms = round_started_ms_ + config_.fetch_interval_ms;
    if (!s->answered) {
      s->answered = true;
      Publish(s, std::make_shared<const DiscoveredNodes>());
    }
  }
  failed_.clear();
  todo_.clear();
  in_round_ = false;
  Schedule();
}

void NacosProvider::Publish(Service* s, DiscoveredNodesConstSharedPtr nodes) {
  s->nodes = std::move(nodes);
  for (const ServiceRef& ref : s->refs) sink_->Publish(ref, s->nodes);
}

StatusOr<std::unique_ptr<DiscoveryProvider>> NacosProviderFactory::Create(
    const nlohmann::json& conf) const {
  StatusOr<NacosProviderConfig> c = ParseNacosProviderConfig(conf);
  if (!c.ok()) return c.status();
  return std::unique_ptr<DiscoveryProvider>(std::make_unique<NacosProvider>(std::move(c).value()));
}

}  // namespace turnpike::discovery
