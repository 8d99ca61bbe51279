// Test doubles for the discovery seam: a resolver answered by the test, and a provider that
// records what it is asked to watch and publishes on demand.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "discovery/resolver.h"
#include "turnpike/discovery.h"

namespace turnpike::discovery {

class FakeResolver final : public Resolver {
 public:
  uint64_t Resolve(const std::string& host, Done done) override {
    uint64_t id = next_++;
    pending_[id] = {host, std::move(done)};
    ++lookups_[host];
    return id;
  }
  void Cancel(uint64_t id) override { pending_.erase(id); }

  // Answers every pending lookup of `host`: an IPv4 address, or a failure when `ip` is "".
  // Returns how many lookups were answered.
  int Answer(const std::string& host, const std::string& ip, uint32_t ttl = 0) {
    int n = 0;
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second.first != host) {
        ++it;
        continue;
      }
      Done done = std::move(it->second.second);
      it = pending_.erase(it);
      Resolution r;
      if (ip.empty()) {
        r.error = "Domain name not found";
      } else {
        auto* v4 = reinterpret_cast<sockaddr_in*>(&r.addr);
        v4->sin_family = AF_INET;
        inet_pton(AF_INET, ip.c_str(), &v4->sin_addr);
        r.addr_len = sizeof(sockaddr_in);
        r.ok = true;
        r.ttl_seconds = ttl;
      }
      done(r);
      ++n;
    }
    return n;
  }
  bool Pending(const std::string& host) const {
    for (const auto& [id, p] : pending_) {
      if (p.first == host) return true;
    }
    return false;
  }
  int lookups(const std::string& host) const {
    auto it = lookups_.find(host);
    return it == lookups_.end() ? 0 : it->second;
  }

 private:
  uint64_t next_ = 1;
  std::map<uint64_t, std::pair<std::string, Done>> pending_;
  std::map<std::string, int> lookups_;
};

class FakeProvider final : public DiscoveryProvider {
 public:
  Status Start(const DiscoveryEnvironment& env) override {
    sink_ = env.sink;
    loop = env.loop;
    ++starts;
    return Status::Ok();
  }
  void Watch(const ServiceRef& service) override {
    watched.insert(service);
    ++watch_calls;
  }
  void Unwatch(const ServiceRef& service) override {
    watched.erase(service);
    ++unwatch_calls;
  }
  void Stop() override { ++stops; }
  bool ready() const override { return ready_flag; }

  void Publish(const std::string& name, DiscoveredNodes nodes) {
    sink_->Publish(ServiceRef{name, {}}, std::make_shared<const DiscoveredNodes>(std::move(nodes)));
  }
  void PublishParts(const std::string& name, std::vector<DiscoveredNodesConstSharedPtr> parts) {
    sink_->PublishParts(ServiceRef{name, {}}, std::move(parts));
  }

  DiscoverySink* sink_ = nullptr;
  uv_loop_t* loop = nullptr;  // the environment's loop, as Start() got it
  std::set<ServiceRef> watched;
  int watch_calls = 0, unwatch_calls = 0, starts = 0, stops = 0;
  bool ready_flag = true;
};

}  // namespace turnpike::discovery
