#include "plugins/limit_count/redis_store.h"

#include "plugins/limit_count/cluster_link.h"
#include "plugins/limit_count/redis_link.h"

namespace turnpike::plugins::limit_count {
namespace {

// Everything that makes two stores different: the servers (or sentinels and master, or
// cluster seeds), the credentials, the database and the deadline.
std::string StoreKey(const RedisConfig& c) {
  std::string key;
  auto add = [&key](std::string_view part) {
    key.append(std::to_string(part.size()));
    key.push_back(':');
    key.append(part);
  };
  auto add_addresses = [&](const std::vector<RedisConfig::Address>& list) {
    for (const RedisConfig::Address& a : list) add(a.host + ":" + std::to_string(a.port));
    add("/");
  };
  add(c.host);
  add(std::to_string(c.port));
  add(std::to_string(c.database));
  add(c.username);
  add(c.password);
  add(std::to_string(c.timeout_ms));
  add_addresses(c.sentinels);
  add(c.master_name);
  add(c.sentinel_username);
  add(c.sentinel_password);
  add(std::to_string(c.connect_timeout_ms));
  add_addresses(c.cluster_nodes);
  add(c.cluster_name);
  return key;
}

}  // namespace

std::shared_ptr<RedisStore> RedisLinks::Get(int worker, uv_loop_s* loop, const RedisConfig& c) {
  std::weak_ptr<RedisStore>& slot = by_worker_[static_cast<size_t>(worker)][StoreKey(c)];
  std::shared_ptr<RedisStore> store = slot.lock();
  if (store == nullptr) {
    if (c.cluster_nodes.empty()) {
      store = std::make_shared<RedisLink>(loop, c);
    } else {
      store = std::make_shared<ClusterLink>(loop, c);
    }
    slot = store;
  }
  return store;
}

}  // namespace turnpike::plugins::limit_count
