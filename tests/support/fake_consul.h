// FakeConsul: a FAKE Consul agent for tests (Consul itself is not installable here). It serves
// the part of Consul's HTTP API that service discovery reads, as Consul documents it
// (developer.hashicorp.com/consul/api-docs: catalog, health, features/blocking), from an
// in-memory registry the test changes:
//   GET /v1/catalog/services            {"name": ["tag", ...]}  (the "consul" service included)
//   GET /v1/health/service/<name>       [{"Node": {...}, "Service": {...}, "Checks": [...]}],
//       ?passing (or passing=true/1)    only instances whose checks all pass; [] when unknown
//   GET /v1/health/state/any            every check [{"Node", "CheckID", "Status", ...}]
// Every answer carries X-Consul-Index (>= 1): the raft index of the last change that the
// endpoint's data saw (catalog/services: registrations; health endpoints: registrations and
// check status changes; health/service/<name>: those of that service), plus Content-Type:
// application/json, X-Consul-KnownLeader and X-Consul-LastContact.
//
// Blocking queries: `?index=N` with N > 0 holds the answer until the endpoint's index is
// above N or `wait` runs out (Go duration: "60s", "5m", "100ms"; default 5m, at most 10m; a
// bare number is 400 "Invalid wait time" as in Consul), then answers with the current data
// and index. No jitter (Consul adds up to wait/16), so tests are exact.
//
// ACL: with SetToken(t), a request carrying another token (X-Consul-Token, "Authorization:
// Bearer", or ?token=) gets 403 "ACL not found"; one carrying none is anonymous under a
// default-deny policy: empty results and X-Consul-Results-Filtered-By-ACLs: true.
//
// Faults: SetFailure(status) answers every request with that status; Stop() closes the
// listener and every connection (a Consul that went down; blocked queries are dropped) and
// Start(port()) brings it back on the same port with the same registry.
//
// Threads: an accept thread and one thread per connection (blocking sockets). Every public
// method is thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace turnpike::testing {

class FakeConsul {
 public:
  struct Instance {
    std::string id;       // service ID (unique); defaults to `service`
    std::string service;  // service name
    std::string address;  // Service.Address ("" as Consul sends when none was registered)
    int port = 0;         // Service.Port
    std::vector<std::string> tags;
    std::map<std::string, std::string> meta;
    std::string node = "node1";              // Node.Node
    std::string node_address = "127.0.0.1";  // Node.Address
    std::string status = "passing";          // its service check: passing, warning, critical
  };

  struct Request {
    std::string method;
    std::string path;   // without the query
    std::string query;  // raw, without '?'
    std::map<std::string, std::string> params;
    std::string token;   // X-Consul-Token, Authorization: Bearer, or ?token=
    int status = 0;      // what it was answered
    uint64_t index = 0;  // X-Consul-Index answered
  };

  // An instance with a passing check on node1.
  static Instance Make(std::string id, std::string service, std::string address, int port,
                       std::vector<std::string> tags = {}) {
    Instance i;
    i.id = std::move(id);
    i.service = std::move(service);
    i.address = std::move(address);
    i.port = port;
    i.tags = std::move(tags);
    return i;
  }

  FakeConsul();
  ~FakeConsul();
  FakeConsul(const FakeConsul&) = delete;
  FakeConsul& operator=(const FakeConsul&) = delete;

  // Listens on 127.0.0.1:`port` (0: a free one). False when it could not.
  bool Start(int port = 0);
  // Closes the listener and every connection; the registry stays.
  void Stop();
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Registry changes; each bumps the raft index once and wakes blocked queries it concerns.
  void Register(Instance instance);  // adds, or replaces the instance with the same id
  void Deregister(const std::string& id);
  void SetStatus(const std::string& id, const std::string& status);
  // Config.
  void SetToken(std::string token);
  void SetFailure(int status);  // 0: answer normally

  uint64_t index() const;
  std::vector<Request> requests() const;
  // Requests answered so far whose path is `path`.
  int Count(const std::string& path) const;
  // Blocking queries being held right now.
  int blocked() const;

 private:
  struct Stored {
    Instance instance;
    uint64_t create_index = 0;
    uint64_t modify_index = 0;
  };
  struct Answer {
    int status = 200;
    std::string body;
    uint64_t index = 0;
    bool filtered = false;
  };

  void AcceptLoop(int listen_fd);
  void Serve(int fd);  // then closes `fd`
  void ServeRequests(int fd);
  // Answers one request on `fd` (holds it first when it is a blocking query). Status 0: the
  // client closed while it was held.
  Answer Handle(int fd, Request* request);
  uint64_t IndexOf(const std::string& path) const;                          // REQUIRES: mu_ held
  std::string Body(const std::string& path, const Request& request) const;  // mu_ held
  void Bump(const std::string& service, bool catalog);                      // mu_ held

  mutable std::mutex mu_;
  std::condition_variable changed_;
  bool running_ = false;
  int port_ = 0;
  int listen_fd_ = -1;
  std::thread accept_thread_;
  std::vector<std::thread> threads_;
  std::vector<int> fds_;
  // Registry.
  std::map<std::string, Stored> instances_;  // by id
  uint64_t raft_index_ = 1;
  uint64_t catalog_index_ = 1;
  uint64_t health_index_ = 1;
  std::map<std::string, uint64_t> service_index_;
  std::string token_;
  int failure_ = 0;
  int blocked_ = 0;
  std::vector<Request> requests_;
};

}  // namespace turnpike::testing
