#include "support/fake_consul.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string_view>

#include "support/net.h"

namespace turnpike::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr std::string_view kHealthService = "/v1/health/service/";
constexpr milliseconds kDefaultWait{5 * 60 * 1000};
constexpr milliseconds kMaxWait{10 * 60 * 1000};

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

std::string LowerString(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = Lower(c);
  return out;
}

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = Lower(c);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && Hex(s[i + 1]) >= 0 && Hex(s[i + 2]) >= 0) {
      out += static_cast<char>(Hex(s[i + 1]) * 16 + Hex(s[i + 2]));
      i += 2;
    } else if (s[i] == '+') {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

// Go's time.ParseDuration for what a client sends: "<number><unit>"..., units ns us ms s m h.
std::optional<milliseconds> ParseGoDuration(std::string_view s) {
  if (s == "0") return milliseconds(0);
  if (s.empty()) return std::nullopt;
  double total_ms = 0;
  while (!s.empty()) {
    size_t n = 0;
    while (n < s.size() && ((s[n] >= '0' && s[n] <= '9') || s[n] == '.')) ++n;
    if (n == 0) return std::nullopt;
    double value = std::stod(std::string(s.substr(0, n)));
    s.remove_prefix(n);
    size_t u = 0;
    while (u < s.size() && !((s[u] >= '0' && s[u] <= '9') || s[u] == '.')) ++u;
    std::string_view unit = s.substr(0, u);
    s.remove_prefix(u);
    if (unit == "ns") {
      total_ms += value / 1e6;
    } else if (unit == "us" || unit == "µs") {
      total_ms += value / 1e3;
    } else if (unit == "ms") {
      total_ms += value;
    } else if (unit == "s") {
      total_ms += value * 1e3;
    } else if (unit == "m") {
      total_ms += value * 60e3;
    } else if (unit == "h") {
      total_ms += value * 3600e3;
    } else {
      return std::nullopt;  // also a missing unit
    }
  }
  return milliseconds(static_cast<int64_t>(total_ms));
}

bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool Passing(const std::string& status) { return status == "passing"; }

json NodeJson(const std::string& node, const std::string& address) {
  return {{"ID", ""},
          {"Node", node},
          {"Address", address},
          {"Datacenter", "dc1"},
          {"TaggedAddresses", {{"lan", address}, {"wan", address}}},
          {"Meta", json::object()},
          {"CreateIndex", 1},
          {"ModifyIndex", 1}};
}

json SerfCheck(const std::string& node) {
  return {{"Node", node},
          {"CheckID", "serfHealth"},
          {"Name", "Serf Health Status"},
          {"Status", "passing"},
          {"Notes", ""},
          {"Output", "Agent alive and reachable"},
          {"ServiceID", ""},
          {"ServiceName", ""},
          {"ServiceTags", json::array()},
          {"CreateIndex", 1},
          {"ModifyIndex", 1}};
}

}  // namespace

FakeConsul::FakeConsul() {
  // A Consul server always lists itself as the service "consul" (Address "" and port 8300).
  Instance self;
  self.id = "consul";
  self.service = "consul";
  self.port = 8300;
  instances_["consul"] = Stored{self, 1, 1};
  service_index_["consul"] = 1;
}

FakeConsul::~FakeConsul() { Stop(); }

bool FakeConsul::Start(int port) {
  Stop();
  int bound = 0;
  int fd = ListenLoopback(port, &bound);
  if (fd < 0) return false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    port_ = bound;
    listen_fd_ = fd;
    running_ = true;
  }
  accept_thread_ = std::thread([this, fd] { AcceptLoop(fd); });
  return true;
}

void FakeConsul::Stop() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_) return;
    running_ = false;
    shutdown(listen_fd_, SHUT_RDWR);
    for (int fd : fds_) shutdown(fd, SHUT_RDWR);
    threads.swap(threads_);
  }
  changed_.notify_all();
  accept_thread_.join();
  for (std::thread& t : threads) t.join();
  std::lock_guard<std::mutex> lock(mu_);
  close(listen_fd_);
  listen_fd_ = -1;
  for (int fd : fds_) close(fd);
  fds_.clear();
}

void FakeConsul::AcceptLoop(int listen_fd) {
  for (;;) {
    int fd = accept(listen_fd, nullptr, nullptr);
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_) {
      if (fd >= 0) close(fd);
      return;
    }
    if (fd < 0) continue;
    fds_.push_back(fd);
    threads_.emplace_back([this, fd] { Serve(fd); });
  }
}

void FakeConsul::Serve(int fd) {
  ServeRequests(fd);
  std::lock_guard<std::mutex> lock(mu_);
  fds_.erase(std::remove(fds_.begin(), fds_.end(), fd), fds_.end());
  close(fd);
}

void FakeConsul::ServeRequests(int fd) {
  std::string in;
  char buf[16384];
  for (;;) {
    size_t head_end;
    while ((head_end = in.find("\r\n\r\n")) == std::string::npos) {
      ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) return;
      in.append(buf, static_cast<size_t>(n));
    }
    std::string head = in.substr(0, head_end + 4);
    in.erase(0, head_end + 4);
    Request request;
    size_t sp1 = head.find(' ');
    size_t sp2 = head.find(' ', sp1 + 1);
    request.method = head.substr(0, sp1);
    std::string target = head.substr(sp1 + 1, sp2 - sp1 - 1);
    size_t q = target.find('?');
    request.path = target.substr(0, q);
    if (q != std::string::npos) {
      request.query = target.substr(q + 1);
      std::string_view rest(request.query);
      while (!rest.empty()) {
        std::string_view pair = rest.substr(0, rest.find('&'));
        rest.remove_prefix(std::min(rest.size(), pair.size() + 1));
        size_t eq = pair.find('=');
        request.params[Unescape(pair.substr(0, eq))] =
            eq == std::string_view::npos ? "" : Unescape(pair.substr(eq + 1));
      }
    }
    bool close_after = false;
    size_t content_length = 0;
    for (size_t pos = head.find("\r\n") + 2; pos < head.size() - 2;) {
      size_t end = head.find("\r\n", pos);
      std::string line = head.substr(pos, end - pos);
      pos = end + 2;
      size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = LowerString(line.substr(0, colon));
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      if (name == "x-consul-token") {
        request.token = value;
      } else if (name == "authorization" && value.rfind("Bearer ", 0) == 0) {
        request.token = value.substr(7);
      } else if (name == "connection" && LowerString(value) == "close") {
        close_after = true;
      } else if (name == "content-length") {
        content_length = std::stoul(value);
      }
    }
    if (request.token.empty() && request.params.count("token") != 0) {
      request.token = request.params["token"];
    }
    while (in.size() < content_length) {  // discarded: every endpoint here is a GET
      ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) return;
      in.append(buf, static_cast<size_t>(n));
    }
    in.erase(0, content_length);

    Answer a = Handle(fd, &request);
    if (a.status == 0) return;  // the client went away
    std::string reason = a.status == 200   ? "OK"
                         : a.status == 400 ? "Bad Request"
                         : a.status == 403 ? "Forbidden"
                         : a.status == 404 ? "Not Found"
                         : a.status == 405 ? "Method Not Allowed"
                                           : "Error";
    std::string out = "HTTP/1.1 " + std::to_string(a.status) + " " + reason + "\r\n";
    out += a.status == 200 ? "Content-Type: application/json\r\n"
                           : "Content-Type: text/plain; charset=utf-8\r\n";
    if (a.index != 0) {
      out += "X-Consul-Index: " + std::to_string(a.index) + "\r\n";
      out += "X-Consul-Knownleader: true\r\nX-Consul-Lastcontact: 0\r\n";
    }
    if (a.filtered) out += "X-Consul-Results-Filtered-By-Acls: true\r\n";
    out += "Content-Length: " + std::to_string(a.body.size()) + "\r\n";
    if (close_after) out += "Connection: close\r\n";
    out += "\r\n" + a.body;
    if (!SendAll(fd, out) || close_after) return;
  }
}

uint64_t FakeConsul::IndexOf(const std::string& path) const {
  if (path == "/v1/catalog/services") return catalog_index_;
  if (path == "/v1/health/state/any") return health_index_;
  if (path.rfind(kHealthService, 0) == 0) {
    auto it = service_index_.find(Unescape(path.substr(kHealthService.size())));
    // Consul answers an unknown service with the index of the services table.
    return it != service_index_.end() ? it->second : catalog_index_;
  }
  return 0;
}

std::string FakeConsul::Body(const std::string& path, const Request& request) const {
  if (path == "/v1/catalog/services") {
    json out = json::object();
    for (const auto& [id, s] : instances_) {
      json& tags = out[s.instance.service];
      if (tags.is_null()) tags = json::array();
      for (const std::string& t : s.instance.tags) {
        if (std::find(tags.begin(), tags.end(), t) == tags.end()) tags.push_back(t);
      }
    }
    return out.dump();
  }
  if (path == "/v1/health/state/any") {
    json out = json::array();
    std::set<std::string> nodes;
    for (const auto& [id, s] : instances_) {
      if (nodes.insert(s.instance.node).second) out.push_back(SerfCheck(s.instance.node));
      out.push_back({{"Node", s.instance.node},
                     {"CheckID", "service:" + id},
                     {"Name", "Service '" + s.instance.service + "' check"},
                     {"Status", s.instance.status},
                     {"ServiceID", id},
                     {"ServiceName", s.instance.service},
                     {"CreateIndex", s.create_index},
                     {"ModifyIndex", s.modify_index}});
    }
    return out.dump();
  }
  // /v1/health/service/<name>
  std::string name = Unescape(path.substr(kHealthService.size()));
  auto passing = request.params.find("passing");
  bool only_passing =
      passing != request.params.end() && passing->second != "false" && passing->second != "0";
  json out = json::array();
  for (const auto& [id, s] : instances_) {
    const Instance& in = s.instance;
    if (in.service != name) continue;
    if (only_passing && !Passing(in.status)) continue;
    json meta = json::object();
    for (const auto& [k, v] : in.meta) meta[k] = v;
    json service = {{"ID", id},
                    {"Service", in.service},
                    {"Tags", in.tags},
                    {"Address", in.address},
                    {"TaggedAddresses", json::object()},
                    {"Meta", in.meta.empty() ? json(nullptr) : meta},
                    {"Port", in.port},
                    {"Weights", {{"Passing", 1}, {"Warning", 1}}},
                    {"EnableTagOverride", false},
                    {"CreateIndex", s.create_index},
                    {"ModifyIndex", s.modify_index}};
    json checks = json::array({SerfCheck(in.node),
                               {{"Node", in.node},
                                {"CheckID", "service:" + id},
                                {"Name", "Service '" + in.service + "' check"},
                                {"Status", in.status},
                                {"ServiceID", id},
                                {"ServiceName", in.service}}});
    out.push_back({{"Node", NodeJson(in.node, in.node_address)},
                   {"Service", std::move(service)},
                   {"Checks", std::move(checks)}});
  }
  return out.dump();
}

FakeConsul::Answer FakeConsul::Handle(int fd, Request* request) {
  Answer a;
  std::unique_lock<std::mutex> lock(mu_);
  auto done = [&](Answer answer) {
    request->status = answer.status;
    request->index = answer.index;
    requests_.push_back(*request);
    return answer;
  };
  bool known =
      request->path == "/v1/catalog/services" || request->path == "/v1/health/state/any" ||
      (request->path.rfind(kHealthService, 0) == 0 && request->path.size() > kHealthService.size());
  if (!known) return done({404, "404 page not found\n", 0, false});
  if (request->method != "GET") return done({405, "method not allowed\n", 0, false});
  if (failure_ != 0) return done({failure_, "injected failure\n", 0, false});
  if (!token_.empty() && !request->token.empty() && request->token != token_) {
    return done({403, "ACL not found\n", 0, false});
  }
  milliseconds wait = kDefaultWait;
  if (auto w = request->params.find("wait"); w != request->params.end()) {
    std::optional<milliseconds> parsed = ParseGoDuration(w->second);
    if (!parsed) return done({400, "Invalid wait time\n", 0, false});
    wait = std::min(*parsed, kMaxWait);
  }
  uint64_t min_index = 0;
  if (auto i = request->params.find("index"); i != request->params.end()) {
    try {
      min_index = std::stoull(i->second);
    } catch (...) {
      return done({400, "Invalid index\n", 0, false});
    }
  }
  if (min_index > 0) {
    // Held until the index moves, the wait runs out, the server stops or the client goes
    // away (Consul ends a blocking query whose client disconnected).
    ++blocked_;
    auto deadline = std::chrono::steady_clock::now() + wait;
    bool gone = false;
    while (running_ && IndexOf(request->path) <= min_index && !gone &&
           std::chrono::steady_clock::now() < deadline) {
      changed_.wait_for(lock, milliseconds(20));
      pollfd p{fd, POLLRDHUP, 0};
      gone = poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
    }
    --blocked_;
    if (!running_) return done({503, "shutting down\n", 0, false});
    if (gone) return done({0, "", 0, false});
  }
  a.index = std::max<uint64_t>(1, IndexOf(request->path));
  if (!token_.empty() && request->token.empty()) {
    a.filtered = true;  // anonymous, default deny: nothing is visible
    a.body = request->path == "/v1/catalog/services" ? "{}" : "[]";
  } else {
    a.body = Body(request->path, *request);
  }
  return done(a);
}

void FakeConsul::Bump(const std::string& service, bool catalog) {
  ++raft_index_;
  if (catalog) catalog_index_ = raft_index_;
  health_index_ = raft_index_;
  service_index_[service] = raft_index_;
}

void FakeConsul::Register(Instance instance) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (instance.id.empty()) instance.id = instance.service;
    auto it = instances_.find(instance.id);
    std::string old_service = it != instances_.end() ? it->second.instance.service : "";
    Bump(instance.service, true);
    if (!old_service.empty() && old_service != instance.service) {
      service_index_[old_service] = raft_index_;
    }
    uint64_t create = it != instances_.end() ? it->second.create_index : raft_index_;
    std::string id = instance.id;
    instances_[id] = Stored{std::move(instance), create, raft_index_};
  }
  changed_.notify_all();
}

void FakeConsul::Deregister(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = instances_.find(id);
    if (it == instances_.end()) return;
    Bump(it->second.instance.service, true);
    instances_.erase(it);
  }
  changed_.notify_all();
}

void FakeConsul::SetStatus(const std::string& id, const std::string& status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = instances_.find(id);
    if (it == instances_.end() || it->second.instance.status == status) return;
    it->second.instance.status = status;
    Bump(it->second.instance.service, false);  // a check changed: not the catalog
    it->second.modify_index = raft_index_;
  }
  changed_.notify_all();
}

void FakeConsul::SetToken(std::string token) {
  std::lock_guard<std::mutex> lock(mu_);
  token_ = std::move(token);
}

void FakeConsul::SetFailure(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  failure_ = status;
}

uint64_t FakeConsul::index() const {
  std::lock_guard<std::mutex> lock(mu_);
  return raft_index_;
}

std::vector<FakeConsul::Request> FakeConsul::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

int FakeConsul::Count(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(std::count_if(requests_.begin(), requests_.end(),
                                        [&](const Request& r) { return r.path == path; }));
}

int FakeConsul::blocked() const {
  std::lock_guard<std::mutex> lock(mu_);
  return blocked_;
}

}  // namespace turnpike::testing
